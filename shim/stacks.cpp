// Call-site capture: see stacks.h.
#include "stacks.h"

#include "env_config.h"
#include "fork.h"
#include "intern_table.h"
#include "lock_order.h"
#include "python_frames.h"

#include <dlfcn.h>
#include <elf.h>
#include <execinfo.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

namespace cuprobe::shim {

uint32_t g_stack_mode = kStacksAlloc;
uint64_t g_stack_min_bytes = env::var(env::Id::kStackMinBytes).def;

namespace {

constexpr int kMaxNative = 64;
static_assert(env::var(env::Id::kStackDepth).max == kMaxNative, "CUPROBE_STACK_DEPTH's range is the frames a stack holds");
int g_depth = int(env::var(env::Id::kStackDepth).def);


// Interned stacks, keyed by their content (StackKey): found without a lock, added under the stacks lock (lock_order.h).
// A stack the table cannot remember (64 slots probed, or the arena full) is written again each
// time, and counted. The arena holds ~50,000 stacks of 32 native frames.
constexpr uint32_t kStackSlots = 1u << 16;
InternTable<kStackSlots, 16u << 20, 64> g_stacks;

// What identifies a stack, laid out as a StackRecord's tail: the native pcs, then the Python frames.
struct StackKey {
  uint16_t n_native;
  uint16_t n_python;
  uint32_t pad;
  uint64_t words[kMaxNative + kMaxPython * sizeof(trace::PyFrame) / 8];
  size_t size() const { return 8 + 8 * size_t(n_native) + sizeof(trace::PyFrame) * size_t(n_python); }
};

// The shim's own code: frames inside it are left out.
uintptr_t g_self_start, g_self_end;

// Modules already written, by start address; dl_iterate_phdr's add/sub counters say when the map changed.
constexpr int kMaxModules = 4096;
uintptr_t g_modules[kMaxModules];
int g_n_modules;
unsigned long long g_adds = ~0ull, g_subs = ~0ull;

// ---- modules ---------------------------------------------------------------------------------

bool known_module(uintptr_t start) {
  for (int i = 0; i < g_n_modules; ++i)
    if (g_modules[i] == start) return true;
  return false;
}

int write_module(struct dl_phdr_info* info, size_t, void*) {
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  const char* build_id = nullptr;
  uint32_t build_id_len = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD) {
      uintptr_t a = info->dlpi_addr + ph.p_vaddr;
      if (a < lo) lo = a;
      if (a + ph.p_memsz > hi) hi = a + ph.p_memsz;
    } else if (ph.p_type == PT_NOTE && build_id == nullptr) {
      const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
      const char* end = p + ph.p_memsz;
      while (p + sizeof(ElfW(Nhdr)) <= end) {
        auto* nh = reinterpret_cast<const ElfW(Nhdr)*>(p);
        const char* name = p + sizeof(ElfW(Nhdr));
        const char* desc = name + ((nh->n_namesz + 3) & ~3u);
        if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0 && desc + nh->n_descsz <= end) {
          build_id = desc;
          build_id_len = nh->n_descsz;
          break;
        }
        p = desc + ((nh->n_descsz + 3) & ~3u);
      }
    }
  }
  if (hi == 0 || known_module(lo) || g_n_modules == kMaxModules) return 0;
  g_modules[g_n_modules++] = lo;
  char exe[4096];
  const char* path = info->dlpi_name;
  if (path == nullptr || *path == 0) {  // the main program
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    path = exe;
  }
  size_t path_len = strnlen(path, 4096);
  uint32_t size = trace::align8(uint32_t(sizeof(trace::ModuleRecord) + path_len + build_id_len));
  MetaWriter w;
  if (char* p = w.reserve(size)) {
    auto* r = reinterpret_cast<trace::ModuleRecord*>(p);
    r->h = trace::make_header(trace::RecordType::kModule, size);
    r->bias = info->dlpi_addr;
    r->start = lo;
    r->end = hi;
    r->path_len = uint32_t(path_len);
    r->build_id_len = build_id_len;
    memcpy(r->text, path, path_len);
    if (build_id_len) memcpy(r->text + path_len, build_id, build_id_len);
    w.commit(size);
  }
  return 0;
}

int read_counters(struct dl_phdr_info* info, size_t size, void* data) {
  auto* c = static_cast<unsigned long long*>(data);
  if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
    c[0] = info->dlpi_adds;
    c[1] = info->dlpi_subs;
  }
  return 1;  // the counters are the same in every entry: one is enough
}

// Under the stacks lock: writes the modules loaded since the last look (dlopen'd libraries included).
void refresh_modules() {
  unsigned long long c[2] = {0, 0};
  dl_iterate_phdr(read_counters, c);
  if (c[0] == g_adds && c[1] == g_subs) return;
  g_adds = c[0];
  g_subs = c[1];
  dl_iterate_phdr(write_module, nullptr);
}

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

}  // namespace

void stacks_configure() {
  // In the order of the entry's words: off, errors, alloc, all.
  if (const char* m = env_value(env::Id::kStacks)) g_stack_mode = StackMode(env::word_index(env::var(env::Id::kStacks), m));
  g_depth = int(env_number(env::Id::kStackDepth));
  g_stack_min_bytes = env_number(env::Id::kStackMinBytes);
  // The shim's own address range: the module whose load bias dladdr reports for this function.
  Dl_info self;
  if (dladdr(reinterpret_cast<void*>(&capture_stack), &self) != 0) {
    auto base = reinterpret_cast<uintptr_t>(self.dli_fbase);
    uintptr_t range[3] = {base, 0, 0};
    dl_iterate_phdr(
        [](struct dl_phdr_info* info, size_t, void* data) {
          auto* r = static_cast<uintptr_t*>(data);
          if (info->dlpi_addr != r[0]) return 0;
          uintptr_t lo = UINTPTR_MAX, hi = 0;
          for (int i = 0; i < info->dlpi_phnum; ++i) {
            const ElfW(Phdr)& ph = info->dlpi_phdr[i];
            if (ph.p_type != PT_LOAD) continue;
            uintptr_t a = info->dlpi_addr + ph.p_vaddr;
            lo = a < lo ? a : lo;
            hi = a + ph.p_memsz > hi ? a + ph.p_memsz : hi;
          }
          r[1] = lo;
          r[2] = hi;
          return 1;
        },
        range);
    g_self_start = range[1];
    g_self_end = range[2];
  }
  // backtrace() loads libgcc_s on its first use: do it now, not inside an application's call.
  if (g_stack_mode != kStacksOff) {
    void* warm[2];
    backtrace(warm, 2);
  }
}

namespace {

// The child's file has none of the parent's stacks or modules.
void stacks_after_fork() {
  g_stacks.reset();
  g_n_modules = 0;
  g_adds = g_subs = ~0ull;
}
CUPROBE_FORK_CHILD_RESET(stacks_after_fork);

}  // namespace

uint32_t capture_stack() {
  if (g_stack_mode == kStacksOff) return 0;
  void* raw[kMaxNative + 8];
  int got = backtrace(raw, g_depth + 8 < kMaxNative + 8 ? g_depth + 8 : kMaxNative + 8);
  // Leave out the shim's own frames at the top, and anything above them (a sanitizer's
  // interceptor of backtrace itself): the caller is the first frame after the last shim frame.
  int first = 0;
  for (int i = 0; i < got && i < 16; ++i) {
    auto pc = reinterpret_cast<uintptr_t>(raw[i]);
    if (pc >= g_self_start && pc < g_self_end) first = i + 1;
  }
  int n_native = got - first < g_depth ? got - first : g_depth;
  uint64_t pcs[kMaxNative];
  for (int i = 0; i < n_native; ++i) pcs[i] = reinterpret_cast<uintptr_t>(raw[first + i]);
  trace::PyFrame py[kMaxPython];
  int n_py = python_frames(py);
  return intern_stack(pcs, n_native, py, n_py);
}

uint32_t intern_stack(const uint64_t* pcs, int n_native, const trace::PyFrame* py, int n_py) {
  if (n_native < 0 || n_native > kMaxNative || n_py < 0 || n_py > kMaxPython) return 0;
  uint64_t h = uint64_t(n_native) << 32 | uint64_t(n_py);
  for (int i = 0; i < n_native; ++i) h = mix(h, pcs[i]);
  for (int i = 0; i < n_py; ++i) h = mix(mix(mix(h, py[i].file), py[i].function), uint64_t(uint32_t(py[i].line)));
  StackKey key;
  key.n_native = uint16_t(n_native);
  key.n_python = uint16_t(n_py);
  key.pad = 0;
  if (n_native > 0) memcpy(key.words, pcs, 8 * size_t(n_native));
  if (n_py > 0) memcpy(&key.words[n_native], py, sizeof(trace::PyFrame) * size_t(n_py));  // py may be null
  if (uint32_t id = g_stacks.find(&key, key.size(), h)) return id;

  shim_lock(LockRank::kStacks);
  auto r = g_stacks.intern(&key, key.size(), h, [&](uint32_t id) {
    refresh_modules();
    uint32_t size = uint32_t(sizeof(trace::StackRecord) + key.size() - 8);
    MetaWriter w;
    if (char* p = w.reserve(size)) {
      auto* rec = reinterpret_cast<trace::StackRecord*>(p);
      rec->h = trace::make_header(trace::RecordType::kStack, size);
      rec->id = id;
      rec->n_native = key.n_native;
      rec->n_python = key.n_python;
      memcpy(rec->pcs, key.words, key.size() - 8);
      w.commit(size);
    }
  });
  if (!r.remembered) count_stat(trace::kStatStacksUntracked);
  shim_unlock(LockRank::kStacks);
  return r.id;
}

}  // namespace cuprobe::shim
