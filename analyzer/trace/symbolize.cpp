// See symbolize.h. ELF files are read with libelf and their DWARF with libdw (elfutils, linked
// statically into the command): no program is started, so nothing from a trace reaches a shell,
// and each file is opened once per Symbolizer however many addresses it resolves. libdwfl,
// elfutils' higher layer, is left out on purpose: its standard lookups ask the debuginfod servers
// the environment names (through a client library loaded with dlopen, which a static binary
// cannot do), and a trace from elsewhere must not make the analyzer fetch anything; the few
// lookups cuprobe needs are written out below.
#include "trace/symbolize.h"

#include "python_paths.h"
#include "safe_files.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

namespace cuprobe::reader {

namespace fs = std::filesystem;

namespace {

// Bounds on what a hostile file can make us keep.
constexpr size_t kMaxUnitRanges = size_t(1) << 22;
constexpr size_t kMaxInlineDepth = 64;

std::string demangle(const char* name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || d == nullptr) return name;
  std::string out = d;
  std::free(d);
  return out;
}

// An ELF file open for reading, mapped by libelf.
class ElfFile {
 public:
  // nullptr unless `path` is a regular file holding an ELF object (files::open_input: a FIFO or a
  // device a trace names is refused, not waited on).
  static std::unique_ptr<ElfFile> open(const std::string& path) {
    uint64_t size = 0;
    files::Why why;
    int fd = files::open_input(path.c_str(), 0, &size, &why);
    if (fd < 0) return nullptr;
    std::unique_ptr<ElfFile> f(new ElfFile(path, fd));
    f->elf_ = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
    if (f->elf_ == nullptr || elf_kind(f->elf_) != ELF_K_ELF) return nullptr;
    return f;
  }
  ~ElfFile() {
    if (elf_) elf_end(elf_);
    close(fd_);
  }
  ElfFile(const ElfFile&) = delete;
  ElfFile& operator=(const ElfFile&) = delete;

  Elf* elf() const { return elf_; }
  const std::string& path() const { return path_; }

  // The section called `name` when it has contents in this file (not NOBITS, as the code
  // sections of a separate debug file are), else nullptr.
  Elf_Scn* section(const char* name) const {
    size_t names = 0;
    if (elf_getshdrstrndx(elf_, &names) != 0) return nullptr;
    for (Elf_Scn* scn = elf_nextscn(elf_, nullptr); scn != nullptr; scn = elf_nextscn(elf_, scn)) {
      GElf_Shdr sh;
      if (gelf_getshdr(scn, &sh) == nullptr || sh.sh_type == SHT_NOBITS) continue;
      const char* n = elf_strptr(elf_, names, sh.sh_name);
      if (n != nullptr && std::strcmp(n, name) == 0) return scn;
    }
    return nullptr;
  }

  bool has_dwarf() const { return section(".debug_info") != nullptr || section(".zdebug_info") != nullptr; }

  // The GNU build id in hex, "" when the file has none.
  std::string build_id() const {
    for (Elf_Scn* scn = elf_nextscn(elf_, nullptr); scn != nullptr; scn = elf_nextscn(elf_, scn)) {
      GElf_Shdr sh;
      if (gelf_getshdr(scn, &sh) == nullptr || sh.sh_type != SHT_NOTE) continue;
      Elf_Data* data = elf_getdata(scn, nullptr);
      if (data == nullptr) continue;
      GElf_Nhdr nh;
      size_t name = 0, desc = 0;
      for (size_t off = 0; (off = gelf_getnote(data, off, &nh, &name, &desc)) > 0;) {
        if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
            std::memcmp(static_cast<const char*>(data->d_buf) + name, "GNU", 4) != 0)
          continue;
        std::string hex;
        const auto* p = static_cast<const uint8_t*>(data->d_buf) + desc;
        for (size_t k = 0; k < nh.n_descsz; ++k) hex += fmt::format("{:02x}", p[k]);
        return hex;
      }
    }
    return "";
  }

  // The .gnu_debuglink section: the debug file's name (a bare file name; anything else is
  // refused), NUL, padding to 4 bytes, and the CRC-32 of the debug file.
  bool debuglink(std::string& name, uint32_t& crc) const {
    Elf_Scn* scn = section(".gnu_debuglink");
    Elf_Data* data = scn ? elf_getdata(scn, nullptr) : nullptr;
    if (data == nullptr || data->d_buf == nullptr) return false;
    const char* p = static_cast<const char*>(data->d_buf);
    size_t len = strnlen(p, data->d_size);
    size_t crc_at = (len + 4) & ~size_t(3);
    if (len == 0 || crc_at + 4 > data->d_size) return false;
    name.assign(p, len);
    if (name.find('/') != std::string::npos || name == "." || name == "..") return false;
    std::memcpy(&crc, p + crc_at, 4);
    const char* ident = elf_getident(elf_, nullptr);
    if (ident != nullptr && (ident[EI_DATA] == ELFDATA2MSB) != (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__))
      crc = __builtin_bswap32(crc);
    return true;
  }

  // The CRC-32 (zlib's, which .gnu_debuglink uses) of the whole file.
  uint32_t crc32_of_file() const {
    uLong crc = crc32(0, nullptr, 0);
    std::vector<unsigned char> buf(1 << 20);
    for (off_t at = 0;;) {
      ssize_t n = pread(fd_, buf.data(), buf.size(), at);
      if (n <= 0) break;
      crc = crc32(crc, buf.data(), uInt(n));
      at += n;
    }
    return uint32_t(crc);
  }

  // The function symbols of .symtab (or .dynsym), sorted by address; false when it has none.
  struct Sym {
    uint64_t addr;
    uint64_t size;
    std::string name;
  };
  bool read_symbols(Elf64_Word type, std::vector<Sym>& out) const {
    bool found = false;
    for (Elf_Scn* scn = elf_nextscn(elf_, nullptr); scn != nullptr; scn = elf_nextscn(elf_, scn)) {
      GElf_Shdr sh;
      if (gelf_getshdr(scn, &sh) == nullptr || sh.sh_type != type || sh.sh_entsize == 0) continue;
      Elf_Data* data = elf_getdata(scn, nullptr);
      if (data == nullptr) continue;
      found = true;
      size_t count = sh.sh_size / sh.sh_entsize;
      for (size_t k = 0; k < count; ++k) {
        GElf_Sym sym;
        if (gelf_getsym(data, int(k), &sym) == nullptr) break;
        if (GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_value == 0) continue;
        const char* name = elf_strptr(elf_, sh.sh_link, sym.st_name);
        if (name != nullptr) out.push_back({sym.st_value, sym.st_size, name});
      }
    }
    std::sort(out.begin(), out.end(), [](const Sym& a, const Sym& b) { return a.addr < b.addr; });
    return found;
  }

 private:
  ElfFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_;
  Elf* elf_ = nullptr;
};

// A DIE's function name: its linkage name demangled, else its plain name, through
// DW_AT_abstract_origin and DW_AT_specification (an inlined instance names neither itself).
std::string function_name(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  for (int at : {DW_AT_linkage_name, DW_AT_MIPS_linkage_name}) {
    if (const char* s = dwarf_formstring(dwarf_attr_integrate(die, at, &attr))) return demangle(s);
  }
  const char* s = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
  return s ? s : "";
}

bool is_function(int tag) {
  return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine || tag == DW_TAG_entry_point;
}

}  // namespace

// A module as found on this machine: the ELF file, where its DWARF is (itself or a separate debug
// file), its function symbols, and what was already resolved in it.
struct Symbolizer::Binary {
  std::unique_ptr<ElfFile> file;   // null when no file matching the module was found
  std::unique_ptr<ElfFile> debug;  // the separate debug file, when the DWARF is there
  Dwarf* dwarf = nullptr;          // null without debug information
  std::vector<ElfFile::Sym> syms;  // sorted by address
  // The address ranges of the compilation units (built on the first lookup: .debug_aranges, which
  // dwarf_addrdie needs, is missing from many builds), sorted by low; `reach` is the highest end
  // of this range and every one before it, which bounds the backward search.
  struct UnitRange {
    uint64_t low, high, reach;
    Dwarf_Die unit;
  };
  std::vector<UnitRange> units;
  bool units_read = false;
  std::map<uint64_t, std::vector<SourceFrame>> frames;  // by module address

  ~Binary() {
    if (dwarf) dwarf_end(dwarf);
  }

  // The symbol table's function at `addr`, demangled; "" when none covers it.
  std::string symbol_at(uint64_t addr) const {
    auto it =
        std::upper_bound(syms.begin(), syms.end(), addr, [](uint64_t v, const ElfFile::Sym& y) { return v < y.addr; });
    if (it == syms.begin()) return "";
    --it;
    if (it->size != 0 && addr >= it->addr + it->size) return "";
    return demangle(it->name.c_str());
  }

  Dwarf_Die* unit_at(uint64_t addr) {
    if (!units_read) read_units();
    auto it =
        std::upper_bound(units.begin(), units.end(), addr, [](uint64_t v, const UnitRange& r) { return v < r.low; });
    while (it != units.begin()) {
      --it;
      if (addr < it->high) return &it->unit;
      if (it->reach <= addr) break;
    }
    return nullptr;
  }

  void read_units() {
    units_read = true;
    Dwarf_CU* cu = nullptr;
    Dwarf_Half version = 0;
    uint8_t type = 0;
    Dwarf_Die die, sub;
    while (units.size() < kMaxUnitRanges && dwarf_get_units(dwarf, cu, &cu, &version, &type, &die, &sub) == 0) {
      if (type != DW_UT_compile && type != DW_UT_skeleton) continue;
      Dwarf_Addr base = 0, low = 0, high = 0;
      for (ptrdiff_t off = 0; (off = dwarf_ranges(&die, off, &base, &low, &high)) > 0 && units.size() < kMaxUnitRanges;)
        if (high > low) units.push_back({low, high, 0, die});
    }
    std::sort(units.begin(), units.end(), [](const UnitRange& a, const UnitRange& b) { return a.low < b.low; });
    uint64_t reach = 0;
    for (auto& u : units) u.reach = reach = std::max(reach, u.high);
  }

  // The source frames at `addr`, innermost first: the innermost function with the line table's
  // line, then each function that code was inlined into with the line of the inlined call. The
  // chain is read from the DIE tree (dwarf_getscopes_die), which nests each inlined instance in
  // its caller; dwarf_getscopes alone would continue into the inlined function's own definition.
  std::vector<SourceFrame> source_frames(uint64_t addr) {
    std::vector<SourceFrame> out;
    Dwarf_Die* unit = dwarf ? unit_at(addr) : nullptr;
    if (unit == nullptr) return out;
    out.emplace_back();
    if (Dwarf_Line* line = dwarf_getsrc_die(unit, addr)) {
      const char* file = dwarf_linesrc(line, nullptr, nullptr);
      int n = 0;
      if (file != nullptr && dwarf_lineno(line, &n) == 0) {
        out[0].file = file;
        out[0].line = n;
      }
    }
    Dwarf_Die* scopes = nullptr;
    int found = dwarf_getscopes(unit, addr, &scopes);
    Dwarf_Die* chain = nullptr;
    int depth = found > 0 ? dwarf_getscopes_die(&scopes[0], &chain) : 0;
    std::free(scopes);
    Dwarf_Files* files = nullptr;
    if (dwarf_getsrcfiles(unit, &files, nullptr) != 0) files = nullptr;
    for (int i = 0; i < depth && out.size() <= kMaxInlineDepth; ++i) {
      int tag = dwarf_tag(&chain[i]);
      if (!is_function(tag)) continue;
      out.back().function = function_name(&chain[i]);
      if (tag != DW_TAG_inlined_subroutine) break;
      SourceFrame caller;
      Dwarf_Attribute attr;
      Dwarf_Word v = 0;
      if (files != nullptr && dwarf_formudata(dwarf_attr(&chain[i], DW_AT_call_file, &attr), &v) == 0) {
        const char* f = dwarf_filesrc(files, v, nullptr, nullptr);
        if (f != nullptr) caller.file = f;
      }
      if (dwarf_formudata(dwarf_attr(&chain[i], DW_AT_call_line, &attr), &v) == 0) caller.line = int(v);
      out.push_back(std::move(caller));
    }
    std::free(chain);
    return out;
  }
};

Symbolizer::Symbolizer(std::vector<std::string> search_dirs) : dirs_(std::move(search_dirs)) {
  if (const char* env = std::getenv("CUPROBE_SYMBOLS"); env != nullptr && *env != 0) {
    std::string all = env;
    for (size_t b = 0, e; b <= all.size(); b = e + 1) {
      e = all.find(':', b);
      if (e == std::string::npos) e = all.size();
      if (e > b) dirs_.push_back(all.substr(b, e - b));
    }
  }
  elf_version(EV_CURRENT);
}

Symbolizer::~Symbolizer() = default;

namespace {

constexpr const char* kSystemDebugRoot = "/usr/lib/debug";

// The separate debug file of `file` (found for the module recorded at `recorded`), the way GDB
// and elfutils look: by build id under each root's .build-id/, then by the .gnu_debuglink name
// beside the file, in .debug/ there, under the system root at the file's directory, and in each
// search directory. A file found by build id must carry that id; one found by name, the same
// build id when both have one, else the CRC the link records.
std::unique_ptr<ElfFile> find_debug_file(const ElfFile& file, const std::string& recorded,
                                         const std::vector<std::string>& dirs) {
  std::string id = file.build_id();
  std::vector<std::string> roots = dirs;
  roots.push_back(kSystemDebugRoot);
  if (id.size() > 2) {
    for (const auto& root : roots) {
      auto d = ElfFile::open((fs::path(root) / ".build-id" / id.substr(0, 2) / (id.substr(2) + ".debug")).string());
      if (d && d->has_dwarf() && d->build_id() == id) return d;
    }
  }
  std::string name;
  uint32_t crc = 0;
  if (!file.debuglink(name, crc)) return nullptr;
  std::vector<fs::path> beside = {fs::path(file.path()).parent_path()};
  if (fs::path(recorded).parent_path() != beside[0]) beside.push_back(fs::path(recorded).parent_path());
  std::vector<fs::path> places;
  for (const auto& dir : beside) {
    places.push_back(dir / name);
    places.push_back(dir / ".debug" / name);
    places.push_back(fs::path(kSystemDebugRoot) / dir.relative_path() / name);
  }
  for (const auto& d : dirs) {
    places.push_back(fs::path(d) / name);
    places.push_back(fs::path(d) / ".debug" / name);
  }
  for (const auto& p : places) {
    if (p == fs::path(file.path())) continue;
    auto d = ElfFile::open(p.string());
    if (!d || !d->has_dwarf()) continue;
    std::string debug_id = d->build_id();
    bool same = (!id.empty() && !debug_id.empty()) ? debug_id == id : d->crc32_of_file() == crc;
    if (same) return d;
  }
  return nullptr;
}

}  // namespace

Symbolizer::Binary* Symbolizer::load(const Module& m) {
  std::string key = m.path + "#" + m.build_id;
  auto it = binaries_.find(key);
  if (it != binaries_.end()) return it->second.get();
  auto b = std::make_unique<Binary>();
  std::vector<std::string> candidates = {m.path};
  std::string base = fs::path(m.path).filename().string();
  for (const auto& d : dirs_) {
    candidates.push_back((fs::path(d) / base).string());
    candidates.push_back((fs::path(d) / fs::path(m.path).relative_path()).string());
  }
  for (const auto& path : candidates) {
    auto f = ElfFile::open(path);
    if (!f) continue;
    // A file of the same name but another build is not the one that ran.
    std::string id = f->build_id();
    if (!m.build_id.empty() && !id.empty() && id != m.build_id) continue;
    b->file = std::move(f);
    break;
  }
  if (b->file) {
    if (!b->file->has_dwarf()) b->debug = find_debug_file(*b->file, m.path, dirs_);
    const ElfFile& dwarf_file = b->debug ? *b->debug : *b->file;
    if (dwarf_file.has_dwarf()) b->dwarf = dwarf_begin_elf(dwarf_file.elf(), DWARF_C_READ, nullptr);
    // .symtab names local functions too; a stripped file may have left it in its debug file.
    if (!b->file->read_symbols(SHT_SYMTAB, b->syms) && !(b->debug && b->debug->read_symbols(SHT_SYMTAB, b->syms)))
      b->file->read_symbols(SHT_DYNSYM, b->syms);
  }
  Binary* out = b.get();
  binaries_[key] = std::move(b);
  return out;
}

Symbol Symbolizer::resolve(const Trace& t, uint64_t pc) {
  std::lock_guard<std::mutex> lock(mu_);
  Symbol s;
  s.pc = pc;
  const Module* m = t.module_of(pc - 1);
  if (m == nullptr) return s;
  s.module = fs::path(m->path).filename().string();
  s.offset = pc - 1 - m->bias;  // the call instruction, not the return address
  Binary* b = load(*m);
  if (!b->file) return s;
  auto known = b->frames.find(s.offset);
  if (known == b->frames.end()) known = b->frames.emplace(s.offset, b->source_frames(s.offset)).first;
  const std::vector<SourceFrame>& frames = known->second;
  if (!frames.empty()) {
    s.function = frames[0].function;
    s.file = frames[0].file;
    s.line = frames[0].line;
    s.inlined_into.assign(frames.begin() + 1, frames.end());
  }
  // The function the compiler emitted is named by the symbol table (as without debug
  // information: clones keep their suffix), the DWARF's name where the table has none.
  std::string emitted = b->symbol_at(s.offset);
  if (emitted.empty()) return s;
  if (s.inlined_into.empty())
    s.function = emitted;
  else
    s.inlined_into.back().function = emitted;
  return s;
}

bool Symbolizer::is_library(const PyFrame& f) { return python_library_root(f.file.c_str()) != kNotLibrary; }

std::string Symbolizer::text(const PyFrame& f) {
  size_t root = python_library_root(f.file.c_str());
  std::string file = root == kNotLibrary ? f.file : f.file.substr(root);
  return fmt::format("{}:{} in {}", file, f.line, f.function);
}

std::string Symbolizer::text(const Symbol& s) {
  auto frame = [](std::string fn, const std::string& file, int line) {
    if (fn.size() > 160) fn = fn.substr(0, 157) + "...";
    return file.empty() ? fn : fmt::format("{} at {}:{}", fn, fs::path(file).filename().string(), line);
  };
  std::string out =
      frame(s.function.empty() ? fmt::format("0x{:x}", s.offset ? s.offset : s.pc) : s.function, s.file, s.line);
  for (const auto& f : s.inlined_into)
    out += " inlined into " + frame(f.function.empty() ? "?" : f.function, f.file, f.line);
  return fmt::format("{} ({})", out, s.module.empty() ? "?" : s.module);
}

std::vector<std::string> Symbolizer::describe(const Trace& t, StackId stack_id, size_t max_python, size_t max_native) {
  std::vector<std::string> out;
  const Stack* st = t.stack(stack_id);
  if (st == nullptr) return out;
  // The application's own innermost line first (what a user can change), then the innermost
  // frames inside libraries (where the call was made), innermost first.
  std::vector<const PyFrame*> order;
  for (const auto& f : st->python) {
    if (!is_library(f)) {
      order.push_back(&f);
      break;
    }
  }
  for (const auto& f : st->python) {
    if (order.size() >= max_python) break;
    if (order.empty() || &f != order[0]) order.push_back(&f);
  }
  for (size_t i = 0; i < order.size() && i < max_python; ++i) out.push_back(text(*order[i]));
  for (size_t i = 0; i < st->pcs.size() && i < max_native; ++i) {
    if (i < st->resolved.size() && !st->resolved[i].empty())
      out.push_back(st->resolved[i]);
    else
      out.push_back(text(resolve(t, st->pcs[i])));
  }
  return out;
}

}  // namespace cuprobe::reader
