// Offline symbolization of the native stacks a trace holds: the module map says which file each
// address came from; the file's symbol tables (.symtab, else .dynsym) name the function
// (demangled), and addr2line gives file:line where the file has debug information. Files are
// looked for at their recorded path, then by name under the search directories (traces copied to
// another machine), and used only when their GNU build id matches the recorded one.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "trace/reader.h"

namespace cuprobe::reader {

struct Symbol {
  uint64_t pc = 0;
  std::string module;    // file name of the module, "" when the address is in none
  uint64_t offset = 0;   // the module's virtual address of the call
  std::string function;  // demangled; "" when unknown
  std::string file;      // source file, "" when unknown
  int line = 0;
};

class Symbolizer {
 public:
  explicit Symbolizer(std::vector<std::string> search_dirs = {});
  ~Symbolizer();
  // Resolves a return address of trace `t` (the call site: the instruction before it).
  Symbol resolve(const Trace& t, uint64_t pc);
  // "file.py:12 in fn" for Python frames, "fn (libx.so)" / "fn at file.cc:12 (libx.so)" for native.
  static std::string text(const PyFrame& f);  // library files relative to site-packages
  static bool is_library(const PyFrame& f);   // installed package or standard library
  static std::string text(const Symbol& s);
  // The stack's frames as text, at most `max` of each kind: the application's innermost Python
  // line, then the innermost Python frames, then the innermost native frames.
  std::vector<std::string> describe(const Trace& t, uint32_t stack_id, size_t max_python = 3, size_t max_native = 4);

 private:
  struct Elf;
  Elf* load(const Module& m);
  std::vector<std::string> dirs_;
  std::map<std::string, std::unique_ptr<Elf>> elfs_;  // by recorded path and build id
  std::mutex mu_;
};

}  // namespace cuprobe::reader
