// The calling thread's innermost Python frames, for call stacks (stacks.cpp): through the stable
// CPython API when the thread holds the GIL, and by reading the interpreter's frame structures
// directly (known layouts of CPython 3.11 to 3.13) when it released it. See python_frames.h.
#include "python_frames.h"

#include "recorder.h"
#include "resolve.h"

#include "python_paths.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

namespace cuprobe::shim {

namespace {

// ---- Python ----------------------------------------------------------------------------------
// The CPython API of the interpreter already in the process (none when there is none), looked up
// once. Only the stable, documented functions are used: a thread's frames are read only when
// PyGILState_Check says it holds the GIL, with the cyclic GC disabled meanwhile so that no
// allocation here can run finalizers (which could call back into the allocator that called us).
struct Python {
  int (*is_initialized)();
  int (*gil_check)();
  void* (*get_frame)();             // PyEval_GetFrame: borrowed
  void* (*frame_code)(void*);       // PyFrame_GetCode: new reference
  void* (*frame_back)(void*);       // PyFrame_GetBack: new reference or NULL
  int (*frame_line)(void*);         // PyFrame_GetLineNumber
  void* (*get_attr)(void*, const char*);  // PyObject_GetAttrString: new reference
  const char* (*utf8)(void*);       // PyUnicode_AsUTF8
  void (*decref)(void*);            // Py_DecRef
  int (*gc_disable)();              // PyGC_Disable (3.10+): previous state
  int (*gc_enable)();
  void (*err_clear)();
  void* (*err_occurred)();
  void* (*this_thread_state)();     // PyGILState_GetThisThreadState: callable without the GIL
  const char* (*version)();         // Py_GetVersion
  uintptr_t code_type, unicode_type, bytes_type;  // &PyCode_Type, &PyUnicode_Type, &PyBytes_Type
  bool ok;
};
Python g_py;
// 0: not probed, 1: a thread is probing (only it writes g_py and g_layout), 2: probed.
uint32_t g_py_probed;

template <typename F>
void find(F& f, const char* name) {
  f = reinterpret_cast<F>(real_dlsym(RTLD_DEFAULT, name));
}

void probe_python() {
  find(g_py.is_initialized, "Py_IsInitialized");
  find(g_py.gil_check, "PyGILState_Check");
  find(g_py.get_frame, "PyEval_GetFrame");
  find(g_py.frame_code, "PyFrame_GetCode");
  find(g_py.frame_back, "PyFrame_GetBack");
  find(g_py.frame_line, "PyFrame_GetLineNumber");
  find(g_py.get_attr, "PyObject_GetAttrString");
  find(g_py.utf8, "PyUnicode_AsUTF8");
  find(g_py.decref, "Py_DecRef");
  find(g_py.gc_disable, "PyGC_Disable");
  find(g_py.gc_enable, "PyGC_Enable");
  find(g_py.err_clear, "PyErr_Clear");
  find(g_py.err_occurred, "PyErr_Occurred");
  find(g_py.this_thread_state, "PyGILState_GetThisThreadState");
  find(g_py.version, "Py_GetVersion");
  g_py.code_type = reinterpret_cast<uintptr_t>(real_dlsym(RTLD_DEFAULT, "PyCode_Type"));
  g_py.unicode_type = reinterpret_cast<uintptr_t>(real_dlsym(RTLD_DEFAULT, "PyUnicode_Type"));
  g_py.bytes_type = reinterpret_cast<uintptr_t>(real_dlsym(RTLD_DEFAULT, "PyBytes_Type"));
  g_py.ok = g_py.is_initialized && g_py.gil_check && g_py.get_frame && g_py.frame_code && g_py.frame_back &&
            g_py.frame_line && g_py.get_attr && g_py.utf8 && g_py.decref && g_py.gc_disable && g_py.gc_enable &&
            g_py.err_clear && g_py.err_occurred;
}

// Files of installed packages and of the standard library, as opposed to the application's own:
// a stack's Python frames stop at the first application frame (the line a user can change).
bool library_file(const char* f) { return python_library_root(f) != kNotLibrary; }

uint32_t intern_attr(void* obj, const char* attr, bool* library = nullptr) {
  void* v = g_py.get_attr(obj, attr);
  if (v == nullptr) {
    g_py.err_clear();
    return 0;
  }
  const char* s = g_py.utf8(v);
  uint32_t id = s ? intern_string(s) : 0;
  if (library && s) *library = library_file(s);
  if (s == nullptr) g_py.err_clear();
  g_py.decref(v);
  return id;
}

// ---- Python frames of a thread that released the GIL ----------------------------------------
// PyTorch releases the GIL while its operators run, so the CUDA calls of a training step arrive
// without it. The thread's own interpreter frames cannot change while it is inside this hook, so
// they are read directly, for the CPython versions whose layouts are known (3.11, 3.12, 3.13;
// offsets from their headers). Every read goes through process_vm_readv, so an unexpected
// layout or a stale pointer gives no frames, never a fault; code and string objects are checked
// against their type objects before use.
struct Layout {
  int minor;
  size_t ts_frame;        // PyThreadState: cframe (3.11, 3.12) or current_frame (3.13)
  bool via_cframe;
  size_t cframe_current;  // _PyCFrame.current_frame
  size_t f_code, f_previous, f_instr, f_owner;
  size_t co_filename, co_name, co_firstlineno, co_linetable, co_code;
  size_t ascii_size;      // sizeof(PyASCIIObject): where a compact ASCII string's text starts
};
constexpr Layout kLayouts[] = {
    {11, 56, true, 8, 32, 48, 56, 69, 112, 120, 72, 136, 184, 48},
    {12, 56, true, 0, 0, 8, 56, 70, 112, 120, 68, 136, 192, 40},
    {13, 72, false, 0, 0, 8, 56, 70, 112, 120, 68, 136, 200, 40},
};
constexpr char kOwnedByCStack = 3;  // 3.12+: an entry frame of the C stack, not Python code
const Layout* g_layout;

bool peek(uintptr_t addr, void* out, size_t n) {
  if (addr == 0) return false;
  struct iovec local = {out, n};
  struct iovec remote = {reinterpret_cast<void*>(addr), n};
  return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == ssize_t(n);
}

template <typename T>
bool peek_at(uintptr_t addr, T* v) {
  return peek(addr, v, sizeof *v);
}

// A compact ASCII str's text, interned; 0 for anything else. *library: it names a library file.
uint32_t peek_str(uintptr_t obj, bool* library = nullptr) {
  uintptr_t type = 0;
  int64_t length = 0;
  uint32_t state = 0;
  if (!peek_at(obj + 8, &type) || type != g_py.unicode_type || !peek_at(obj + 16, &length) || !peek_at(obj + 32, &state)) {
    return 0;
  }
  bool compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
  if (!compact || !ascii || length < 0 || length > 1024) return 0;
  char buf[1025];
  if (!peek(obj + g_layout->ascii_size, buf, size_t(length))) return 0;
  buf[length] = 0;
  if (library) *library = library_file(buf);
  return intern_string(buf);
}

// The line of code unit `lasti` in a 3.11+ location table (Objects/locations.md).
int line_in_table(const uint8_t* buf, size_t n, int32_t line, int64_t lasti) {
  size_t i = 0;
  auto varint = [&]() {
    uint64_t v = 0;
    int shift = 0;
    while (i < n) {
      uint8_t b = buf[i++];
      v |= uint64_t(b & 63) << shift;
      shift += 6;
      if (!(b & 64)) break;
    }
    return v;
  };
  auto svarint = [&]() {
    uint64_t u = varint();
    return (u & 1) ? -int64_t(u >> 1) : int64_t(u >> 1);
  };
  int64_t addr = 0;
  while (i < n) {
    uint8_t first = buf[i++];
    if (!(first & 0x80)) return 0;  // lost track of the entries
    int kind = (first >> 3) & 15;
    int64_t length = (first & 7) + 1;
    if (kind == 14) {
      line += int32_t(svarint());
      varint();
      varint();
      varint();
    } else if (kind == 13) {
      line += int32_t(svarint());
    } else if (kind >= 10 && kind <= 12) {
      line += kind - 10;
      i += 2;
    } else if (kind < 10) {
      i += 1;
    }
    if (lasti < addr + length) return kind == 15 ? 0 : line;
    addr += length;
  }
  return 0;
}

// What was learned about a code object, per thread, so that a stack taken again from the same
// code costs three reads per frame (the frame, the code object's header, its line table).
struct CodeInfo {
  uintptr_t code, filename, name, linetable;
  uint32_t file_sid, name_sid;
  int64_t table_size;  // bytes objects are immutable: known once per code object
  bool library;
};
constexpr int kCodeSlots = 256;
__thread CodeInfo t_codes[kCodeSlots] __attribute__((tls_model("initial-exec")));

template <typename T>
T field_at(const uint8_t* base, size_t off) {
  T v;
  memcpy(&v, base + off, sizeof v);
  return v;
}

void pick_layout() {
  if (g_py.version == nullptr || !g_py.code_type || !g_py.unicode_type || !g_py.bytes_type) return;
  const char* v = g_py.version();  // "3.12.3 (main, ...": a static string
  for (const Layout& l : kLayouts) {
    if (v[0] == '3' && v[1] == '.' && atoi(v + 2) == l.minor) g_layout = &l;
  }
}

int python_frames_raw(trace::PyFrame* out) {
  if (g_layout == nullptr || g_py.this_thread_state == nullptr) return 0;
  const Layout& L = *g_layout;
  auto ts = reinterpret_cast<uintptr_t>(g_py.this_thread_state());
  uintptr_t frame = 0;
  if (L.via_cframe) {
    uintptr_t cframe = 0;
    if (!peek_at(ts + L.ts_frame, &cframe) || !peek_at(cframe + L.cframe_current, &frame)) return 0;
  } else if (!peek_at(ts + L.ts_frame, &frame)) {
    return 0;
  }
  static __thread uint8_t table[8192];
  int n = 0;
  for (int hops = 0; frame != 0 && n < kMaxPython && hops < 256; ++hops) {
    uint8_t f[80];
    if (!peek(frame, f, sizeof f)) break;
    auto code = field_at<uintptr_t>(f, L.f_code);
    auto instr = field_at<uintptr_t>(f, L.f_instr);
    auto previous = field_at<uintptr_t>(f, L.f_previous);
    char owner = field_at<char>(f, L.f_owner);
    frame = previous;
    uint8_t c[208];
    if (owner == kOwnedByCStack || !peek(code, c, L.co_code) || field_at<uintptr_t>(c, 8) != g_py.code_type) continue;
    auto filename = field_at<uintptr_t>(c, L.co_filename);
    auto name = field_at<uintptr_t>(c, L.co_name);
    auto linetable = field_at<uintptr_t>(c, L.co_linetable);
    CodeInfo& ci = t_codes[(code >> 4) % kCodeSlots];
    if (ci.code != code || ci.filename != filename || ci.name != name || ci.linetable != linetable) {
      uint8_t head[24];
      bool bytes = peek(linetable, head, sizeof head) && field_at<uintptr_t>(head, 8) == g_py.bytes_type;
      bool library = true;
      uint32_t file_sid = peek_str(filename, &library);
      ci = CodeInfo{code, filename, name, linetable, file_sid, peek_str(name), bytes ? field_at<int64_t>(head, 16) : 0,
                    library};
    }
    if (ci.file_sid == 0) continue;
    int line = 0;
    if (ci.table_size > 0) {
      size_t len = size_t(ci.table_size) < sizeof table ? size_t(ci.table_size) : sizeof table;
      int64_t lasti = instr > code + L.co_code ? int64_t(instr - (code + L.co_code)) / 2 : 0;
      if (peek(linetable + 32, table, len)) line = line_in_table(table, len, field_at<int32_t>(c, L.co_firstlineno), lasti);
    }
    out[n].file = ci.file_sid;
    out[n].function = ci.name_sid;
    out[n].line = line;
    out[n].pad = 0;
    ++n;
    if (!ci.library) break;  // the application's own line: what a stack needs from Python
  }
  return n;
}

}  // namespace

int python_frames(trace::PyFrame* out) {
  if (__atomic_load_n(&g_py_probed, __ATOMIC_ACQUIRE) != 2) {
    // One thread probes; one that comes meanwhile takes no Python frames this once rather than
    // wait (the prober may be waiting for the loader lock, which the caller may hold).
    uint32_t expected = 0;
    if (!__atomic_compare_exchange_n(&g_py_probed, &expected, 1u, false, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE)) {
      return 0;
    }
    probe_python();  // dlsym only
    pick_layout();
    __atomic_store_n(&g_py_probed, 2u, __ATOMIC_RELEASE);
  }
  if (!g_py.ok || !g_py.is_initialized()) return 0;
  if (g_py.gil_check() != 1) return python_frames_raw(out);
  // An exception being raised is left alone: the calls below could clobber it.
  if (g_py.err_occurred() != nullptr) return 0;
  int gc_was = g_py.gc_disable();
  int n = 0;
  void* frame = g_py.get_frame();
  bool owned = false;
  while (frame != nullptr && n < kMaxPython) {
    void* code = g_py.frame_code(frame);
    bool library = true;
    if (code != nullptr) {
      out[n].file = intern_attr(code, "co_filename", &library);
      out[n].function = intern_attr(code, "co_name");
      out[n].line = g_py.frame_line(frame);
      out[n].pad = 0;
      ++n;
      g_py.decref(code);
    }
    if (!library) break;  // the application's own line: what a stack needs from Python
    void* back = g_py.frame_back(frame);
    if (owned) g_py.decref(frame);
    frame = back;
    owned = true;
  }
  if (owned && frame != nullptr) g_py.decref(frame);
  if (gc_was) g_py.gc_enable();
  return n;
}

void python_frames_after_fork() {
  // A probe another thread had under way when the process forked never ends in the child.
  if (__atomic_load_n(&g_py_probed, __ATOMIC_RELAXED) == 1) __atomic_store_n(&g_py_probed, 0u, __ATOMIC_RELAXED);
}

}  // namespace cuprobe::shim
