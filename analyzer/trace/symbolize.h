// Offline symbolization of the native stacks a trace holds: the module map says which file each
// address came from; the file's symbol tables (.symtab, else .dynsym) name the function
// (demangled), and its DWARF (read in process with libdw, elfutils) gives file:line and the chain
// of inlined calls. Debug information is taken from the file itself, else from a separate debug
// file: by build id under each search directory and /usr/lib/debug (.build-id/NN/REST.debug), then
// by the file's .gnu_debuglink name beside it, in .debug/ there, under /usr/lib/debug and in the
// search directories. Files are looked for at their recorded path, then by name under the search
// directories (traces copied to another machine), and used only when their GNU build id matches
// the recorded one. Paths in a trace are untrusted: they are only ever opened read-only, never
// handed to a shell or another program.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "trace/reader.h"

namespace cuprobe::reader {

// A function and a line in it.
struct SourceFrame {
  std::string function;  // demangled; "" when unknown
  std::string file;      // source file, "" when unknown
  int line = 0;
};

struct Symbol {
  uint64_t pc = 0;
  std::string module;    // file name of the module, "" when the address is in none
  uint64_t offset = 0;   // the module's virtual address of the call
  std::string function;  // demangled; "" when unknown. The innermost function: an inlined one when
                         // the call sits in code the compiler inlined
  std::string file;      // source file, "" when unknown
  int line = 0;
  // The functions `function` was inlined into, innermost first, each with the line of the inlined
  // call; the last one is the function the compiler emitted. Empty when the call was not inlined.
  std::vector<SourceFrame> inlined_into;
};

class Symbolizer {
 public:
  explicit Symbolizer(std::vector<std::string> search_dirs = {});
  ~Symbolizer();
  // Resolves a return address of trace `t` (the call site: the instruction before it).
  Symbol resolve(const Trace& t, uint64_t pc);
  // "file.py:12 in fn" for Python frames, "fn (libx.so)" / "fn at file.cc:12 (libx.so)" for native,
  // "fn at file.h:3 inlined into caller at file.cc:12 (libx.so)" for a call in inlined code.
  static std::string text(const PyFrame& f);  // library files relative to site-packages
  static bool is_library(const PyFrame& f);   // installed package or standard library
  static std::string text(const Symbol& s);
  // The stack's frames as text, at most `max` of each kind: the application's innermost Python
  // line, then the innermost Python frames, then the innermost native frames.
  std::vector<std::string> describe(const Trace& t, StackId stack_id, size_t max_python = 3, size_t max_native = 4);

 private:
  struct Binary;
  Binary* load(const Module& m);
  std::vector<std::string> dirs_;
  std::map<std::string, std::unique_ptr<Binary>> binaries_;  // by recorded path and build id
  std::mutex mu_;
};

}  // namespace cuprobe::reader
