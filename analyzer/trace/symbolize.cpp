// See symbolize.h.
#include "trace/symbolize.h"

#include "python_paths.h"

#include <cxxabi.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>

#include <fmt/format.h>

namespace cuprobe::reader {

namespace fs = std::filesystem;

struct Symbolizer::Elf {
  bool ok = false;
  std::string path;  // the file actually read
  bool has_debug_line = false;
  struct Sym {
    uint64_t addr;
    uint64_t size;
    std::string name;
  };
  std::vector<Sym> syms;  // sorted by addr
  std::map<uint64_t, std::pair<std::string, int>> lines;  // vaddr -> (file, line), from addr2line
  bool lines_done = false;
};

namespace {

std::string demangle(const std::string& name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || d == nullptr) return name;
  std::string out = d;
  std::free(d);
  return out;
}

// A whole ELF file mapped read-only, for as long as it is parsed.
struct Mapped {
  const char* p = nullptr;
  size_t size = 0;
  explicit Mapped(const std::string& path) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st;
    if (fstat(fd, &st) == 0 && st.st_size > 64) {
      void* m = mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (m != MAP_FAILED) {
        p = static_cast<const char*>(m);
        size = size_t(st.st_size);
      }
    }
    close(fd);
  }
  ~Mapped() {
    if (p) munmap(const_cast<char*>(p), size);
  }
  template <typename T>
  const T* at(uint64_t off, uint64_t count = 1) const {
    if (off > size || count > (size - off) / sizeof(T)) return nullptr;
    return reinterpret_cast<const T*>(p + off);
  }
};

std::string build_id_of(const Mapped& f, const Elf64_Ehdr* eh) {
  const auto* sh = f.at<Elf64_Shdr>(eh->e_shoff, eh->e_shnum);
  if (!sh) return "";
  for (int i = 0; i < eh->e_shnum; ++i) {
    if (sh[i].sh_type != SHT_NOTE) continue;
    uint64_t off = sh[i].sh_offset, end = off + sh[i].sh_size;
    while (off + sizeof(Elf64_Nhdr) <= end) {
      const auto* nh = f.at<Elf64_Nhdr>(off);
      if (!nh) break;
      uint64_t name = off + sizeof(Elf64_Nhdr);
      uint64_t desc = name + ((nh->n_namesz + 3) & ~3u);
      if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && desc + nh->n_descsz <= f.size &&
          std::memcmp(f.p + name, "GNU", 4) == 0) {
        std::string hex;
        for (uint32_t k = 0; k < nh->n_descsz; ++k) hex += fmt::format("{:02x}", uint8_t(f.p[desc + k]));
        return hex;
      }
      off = desc + ((nh->n_descsz + 3) & ~3u);
    }
  }
  return "";
}

}  // namespace

Symbolizer::Symbolizer(std::vector<std::string> search_dirs) : dirs_(std::move(search_dirs)) {
  if (const char* env = std::getenv("CUPROBE_SYMBOLS"); env != nullptr && *env != 0) {
    std::string all = env;
    for (size_t b = 0, e; b <= all.size(); b = e + 1) {
      e = all.find(':', b);
      if (e == std::string::npos) e = all.size();
      if (e > b) dirs_.push_back(all.substr(b, e - b));
    }
  }
}

Symbolizer::~Symbolizer() = default;

Symbolizer::Elf* Symbolizer::load(const Module& m) {
  std::string key = m.path + "#" + m.build_id;
  auto it = elfs_.find(key);
  if (it != elfs_.end()) return it->second.get();
  auto elf = std::make_unique<Elf>();
  std::vector<std::string> candidates = {m.path};
  std::string base = fs::path(m.path).filename().string();
  for (const auto& d : dirs_) {
    candidates.push_back((fs::path(d) / base).string());
    candidates.push_back((fs::path(d) / fs::path(m.path).relative_path()).string());
  }
  for (const auto& path : candidates) {
    Mapped f(path);
    const auto* eh = f.at<Elf64_Ehdr>(0);
    if (!eh || std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64) continue;
    // A file of the same name but another build is not the one that ran.
    if (!m.build_id.empty()) {
      std::string id = build_id_of(f, eh);
      if (!id.empty() && id != m.build_id) continue;
    }
    const auto* sh = f.at<Elf64_Shdr>(eh->e_shoff, eh->e_shnum);
    if (!sh) continue;
    const Elf64_Shdr* names = eh->e_shstrndx < eh->e_shnum ? &sh[eh->e_shstrndx] : nullptr;
    bool have_symtab = false;
    for (int i = 0; i < eh->e_shnum; ++i) {
      if (sh[i].sh_type == SHT_SYMTAB) have_symtab = true;
      if (names && sh[i].sh_name < names->sh_size) {
        const char* n = f.p + names->sh_offset + sh[i].sh_name;
        if (names->sh_offset + sh[i].sh_name < f.size && std::strncmp(n, ".debug_line", 11) == 0) elf->has_debug_line = true;
      }
    }
    for (int i = 0; i < eh->e_shnum; ++i) {
      // .symtab when there is one (it includes local functions), else the dynamic symbols.
      if (sh[i].sh_type != (have_symtab ? SHT_SYMTAB : SHT_DYNSYM) || sh[i].sh_link >= eh->e_shnum) continue;
      const Elf64_Shdr& strs = sh[sh[i].sh_link];
      const auto* syms = f.at<Elf64_Sym>(sh[i].sh_offset, sh[i].sh_size / sizeof(Elf64_Sym));
      if (!syms) continue;
      for (uint64_t k = 0; k < sh[i].sh_size / sizeof(Elf64_Sym); ++k) {
        const Elf64_Sym& s = syms[k];
        if (ELF64_ST_TYPE(s.st_info) != STT_FUNC || s.st_value == 0 || s.st_name >= strs.sh_size) continue;
        elf->syms.push_back({s.st_value, s.st_size, std::string(f.p + strs.sh_offset + s.st_name)});
      }
    }
    std::sort(elf->syms.begin(), elf->syms.end(), [](const Elf::Sym& a, const Elf::Sym& b) { return a.addr < b.addr; });
    elf->ok = true;
    elf->path = path;
    break;
  }
  Elf* out = elf.get();
  elfs_[key] = std::move(elf);
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
  Elf* elf = load(*m);
  if (!elf->ok) return s;
  auto it = std::upper_bound(elf->syms.begin(), elf->syms.end(), s.offset,
                             [](uint64_t v, const Elf::Sym& y) { return v < y.addr; });
  if (it != elf->syms.begin()) {
    --it;
    if (it->size == 0 || s.offset < it->addr + it->size) s.function = demangle(it->name);
  }
  if (elf->has_debug_line) {
    auto known = elf->lines.find(s.offset);
    if (known == elf->lines.end()) {
      // addr2line (binutils), one address at a time; only files with line tables get here.
      std::string cmd = fmt::format("addr2line -e '{}' 0x{:x} 2>/dev/null", elf->path, s.offset);
      std::pair<std::string, int> fl{"", 0};
      if (FILE* p = popen(cmd.c_str(), "r")) {
        char buf[4096];
        if (std::fgets(buf, sizeof buf, p)) {
          std::string line = buf;
          line.erase(line.find_last_not_of("\r\n") + 1);
          size_t colon = line.rfind(':');
          if (colon != std::string::npos && line.compare(0, 2, "??") != 0) {
            fl.first = line.substr(0, colon);
            fl.second = std::atoi(line.c_str() + colon + 1);
          }
        }
        pclose(p);
      }
      known = elf->lines.emplace(s.offset, fl).first;
    }
    s.file = known->second.first;
    s.line = known->second.second;
  }
  return s;
}

bool Symbolizer::is_library(const PyFrame& f) { return python_library_root(f.file.c_str()) != kNotLibrary; }

std::string Symbolizer::text(const PyFrame& f) {
  size_t root = python_library_root(f.file.c_str());
  std::string file = root == kNotLibrary ? f.file : f.file.substr(root);
  return fmt::format("{}:{} in {}", file, f.line, f.function);
}

std::string Symbolizer::text(const Symbol& s) {
  std::string fn = s.function.empty() ? fmt::format("0x{:x}", s.offset ? s.offset : s.pc) : s.function;
  if (fn.size() > 160) fn = fn.substr(0, 157) + "...";
  std::string where = s.file.empty() ? "" : fmt::format(" at {}:{}", fs::path(s.file).filename().string(), s.line);
  return fmt::format("{}{} ({})", fn, where, s.module.empty() ? "?" : s.module);
}

std::vector<std::string> Symbolizer::describe(const Trace& t, uint32_t stack_id, size_t max_python, size_t max_native) {
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
    if (i < st->resolved.size() && !st->resolved[i].empty()) out.push_back(st->resolved[i]);
    else out.push_back(text(resolve(t, st->pcs[i])));
  }
  return out;
}

}  // namespace cuprobe::reader
