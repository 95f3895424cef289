// Lazy resolution of real functions; see resolve.h.
#include "resolve.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "recorder.h"

namespace cuprobe::shim {

void* g_real[kApiCount];

namespace {

constexpr int kLibraries = 7;  // indexed by trace::Library

struct LibraryCopy {
  void* handle;  // atomic: published after path is written
  int claimed;   // atomic: the one thread that writes path
  char path[4096];
};
LibraryCopy g_libs[kLibraries];

const char* soname_prefix(trace::Library lib) {
  switch (lib) {
    case trace::Library::kCudart: return "libcudart.so";
    case trace::Library::kCudnn: return "libcudnn.so";
    case trace::Library::kDriver: return "libcuda.so";
    case trace::Library::kTorch: return "libc10.so";
    case trace::Library::kNccl: return "libnccl.so";
    case trace::Library::kCublasLt: return "libcublasLt.so";
  }
  return "";
}

// Matches "libcudnn.so" and "libcudnn.so.9[.x.y]", not "libcudnn_graph.so.9".
bool basename_matches(const char* path, const char* prefix) {
  const char* base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t n = strlen(prefix);
  return strncmp(base, prefix, n) == 0 && (base[n] == 0 || base[n] == '.');
}

struct FindState {
  const char* prefix;
  uintptr_t self_base;
  char first[4096];
  int matches;
};

int find_callback(struct dl_phdr_info* info, size_t, void* data) {
  auto* st = static_cast<FindState*>(data);
  if (info->dlpi_name == nullptr || info->dlpi_name[0] == 0) return 0;
  if (uintptr_t(info->dlpi_addr) == st->self_base) return 0;
  if (!basename_matches(info->dlpi_name, st->prefix)) return 0;
  if (st->matches == 0) {
    size_t n = strnlen(info->dlpi_name, sizeof st->first - 1);
    memcpy(st->first, info->dlpi_name, n);
    st->first[n] = 0;
  } else if (strcmp(st->first, info->dlpi_name) == 0) {
    return 0;
  }
  st->matches++;
  return 0;
}

uintptr_t self_base() {
  Dl_info di;
  if (dladdr(reinterpret_cast<void*>(&self_base), &di) == 0) return 0;
  return reinterpret_cast<uintptr_t>(di.dli_fbase);
}

void* mapped_library_handle(trace::Library lib) {
  LibraryCopy& copy = g_libs[int(lib)];
  void* h = __atomic_load_n(&copy.handle, __ATOMIC_ACQUIRE);
  if (h != nullptr) return h;
  FindState st{};
  st.prefix = soname_prefix(lib);
  st.self_base = self_base();
  dl_iterate_phdr(find_callback, &st);
  if (st.matches == 0) return nullptr;
  if (st.matches > 1) set_stat_max(trace::kStatDuplicateLibraries, uint64_t(st.matches));
  h = dlopen(st.first, RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
  if (h == nullptr) return nullptr;
  // Threads that get here at once (the first calls of several threads, each describing its
  // device through the driver: driver_queries.cpp) find the same library, and dlopen hands each
  // the same handle. One of them writes the path and publishes the handle, keeping its reference;
  // the others drop theirs (the winner's keeps the library) and return the same handle. No lock:
  // this runs inside wrapped calls, possibly under the loader's lock.
  int unclaimed = 0;
  if (__atomic_compare_exchange_n(&copy.claimed, &unclaimed, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    memcpy(copy.path, st.first, sizeof copy.path);
    __atomic_store_n(&copy.handle, h, __ATOMIC_RELEASE);
  } else {
    dlclose(h);
  }
  return h;
}

using DlsymFn = void* (*)(void*, const char*);
DlsymFn g_dlsym;

}  // namespace

namespace {

// The shim's own mapped address range, found once (dladdr takes the loader's lock and walks every
// object: microseconds, too slow for each driver entry-point lookup).
uintptr_t g_self_lo, g_self_hi;

int self_range_callback(struct dl_phdr_info* info, size_t, void* base) {
  if (uintptr_t(info->dlpi_addr) != *static_cast<uintptr_t*>(base)) return 0;
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    lo = lo < info->dlpi_addr + ph.p_vaddr ? lo : info->dlpi_addr + ph.p_vaddr;
    hi = hi > info->dlpi_addr + ph.p_vaddr + ph.p_memsz ? hi : info->dlpi_addr + ph.p_vaddr + ph.p_memsz;
  }
  __atomic_store_n(&g_self_lo, lo, __ATOMIC_RELAXED);
  __atomic_store_n(&g_self_hi, hi, __ATOMIC_RELEASE);
  return 1;
}

}  // namespace

bool in_shim(const void* p) {
  if (__atomic_load_n(&g_self_hi, __ATOMIC_ACQUIRE) == 0) {
    uintptr_t base = self_base();
    dl_iterate_phdr(self_range_callback, &base);
  }
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  return a >= __atomic_load_n(&g_self_lo, __ATOMIC_RELAXED) && a < __atomic_load_n(&g_self_hi, __ATOMIC_ACQUIRE);
}

// Not instrumented by ThreadSanitizer: its runtime looks its own functions up through dlsym (the
// shim's, dlsym_stub.S) while it initializes, before an instrumented function may run.
__attribute__((no_sanitize("thread"))) void* real_dlsym_address() {
  auto fn = __atomic_load_n(&g_dlsym, __ATOMIC_ACQUIRE);
  if (fn != nullptr) return reinterpret_cast<void*>(fn);
  // glibc 2.34 moved dlsym into libc under a new version and kept the old one; older ones have
  // only the old one (in libdl). The shim's own dlsym is not "next" to itself.
  void* p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
#ifdef CUPROBE_GLIBC_BASE
  if (p == nullptr) p = dlvsym(RTLD_NEXT, "dlsym", CUPROBE_GLIBC_BASE);
#endif
  if (p == nullptr) p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  __atomic_store_n(&g_dlsym, reinterpret_cast<DlsymFn>(p), __ATOMIC_RELEASE);
  return p;
}

void* real_dlsym(void* handle, const char* name) {
  auto fn = reinterpret_cast<DlsymFn>(real_dlsym_address());
  return fn ? fn(handle, name) : nullptr;
}

void* resolve_in_library(trace::Library lib, const char* name) {
  void* p = real_dlsym(RTLD_NEXT, name);
  if (p != nullptr && !in_shim(p)) return p;
  void* h = mapped_library_handle(lib);
  return h ? real_dlsym(h, name) : nullptr;
}

void* resolve_slot(ApiId id) {
  const ApiStatic& a = api_static(id);
  void* p = resolve_in_library(a.library, a.name);
  if (p != nullptr) __atomic_store_n(&g_real[int(id)], p, __ATOMIC_RELEASE);
  return p;
}

}  // namespace cuprobe::shim
