// Lazy resolution of real functions; see resolve.h.
#include "resolve.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "recorder.h"

namespace cuprobe::shim {

void* g_real[kApiCount];

namespace {

constexpr int kLibraries = 4;  // indexed by trace::Library

struct LibraryCopy {
  void* handle;  // atomic
  char path[4096];
};
LibraryCopy g_libs[kLibraries];

const char* soname_prefix(trace::Library lib) {
  switch (lib) {
    case trace::Library::kCudart: return "libcudart.so";
    case trace::Library::kCudnn: return "libcudnn.so";
    case trace::Library::kDriver: return "libcuda.so";
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
  memcpy(copy.path, st.first, sizeof copy.path);
  void* expected = nullptr;
  if (!__atomic_compare_exchange_n(&copy.handle, &expected, h, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    dlclose(h);  // another thread won; drop our extra reference
    h = expected;
  }
  return h;
}

bool inside_self(void* p) {
  Dl_info di;
  return dladdr(p, &di) != 0 && reinterpret_cast<uintptr_t>(di.dli_fbase) == self_base();
}

}  // namespace

void* resolve_in_library(trace::Library lib, const char* name) {
  void* p = dlsym(RTLD_NEXT, name);
  if (p != nullptr && !inside_self(p)) return p;
  void* h = mapped_library_handle(lib);
  return h ? dlsym(h, name) : nullptr;
}

void* resolve_slot(ApiId id) {
  const ApiStatic& a = api_static(id);
  void* p = resolve_in_library(a.library, a.name);
  if (p != nullptr) __atomic_store_n(&g_real[int(id)], p, __ATOMIC_RELEASE);
  return p;
}

const char* library_path(trace::Library lib) {
  return __atomic_load_n(&g_libs[int(lib)].handle, __ATOMIC_ACQUIRE) ? g_libs[int(lib)].path : "";
}

}  // namespace cuprobe::shim
