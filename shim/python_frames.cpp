// The calling thread's innermost Python frames, for call stacks (stacks.cpp): through the stable
// CPython API when the thread holds the GIL, and by reading the interpreter's frame structures
// directly (python_layout.h: CPython 3.10 to 3.14) when it released it. See python_frames.h.
#include "python_frames.h"

#include "fork.h"
#include "python_layout.h"
#include "python_lines.h"
#include "recorder_internal.h"
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
// they are read directly, with the layout python_layout.h gives for the running CPython (fixed
// tables for 3.10 to 3.12, CPython's own _Py_DebugOffsets for 3.13 and 3.14). Every read goes
// through process_vm_readv, so an unexpected layout or a stale pointer gives no frames, never a
// fault; code, string and bytes objects are checked against their type objects before use.
PyLayout g_layout_storage;
const PyLayout* g_layout;
LayoutStatus g_layout_status;
bool g_refuse_all;  // a free-threaded build: not even the API path (python_frames.h)

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
  const PyLayout& L = *g_layout;
  uintptr_t type = 0;
  int64_t length = 0;
  uint32_t state = 0;
  if (!peek_at(obj + L.ob_type, &type) || type != g_py.unicode_type || !peek_at(obj + L.str_length, &length) ||
      !peek_at(obj + L.str_state, &state)) {
    return 0;
  }
  // The state bit field: interned (2 bits), kind (3), compact, ascii: the same from 3.10 to 3.14.
  bool compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
  if (!compact || !ascii || length < 0 || length > 1024) return 0;
  char buf[1025];
  if (!peek(obj + L.str_ascii_data, buf, size_t(length))) return 0;
  buf[length] = 0;
  if (library) *library = library_file(buf);
  return intern_string(buf);
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

// PY_VERSION_HEX of the running interpreter: Py_Version (3.11+, the whole value), else the text of
// Py_GetVersion() (major, minor, micro).
uint32_t running_version() {
  uint32_t hex = 0;
  auto v = reinterpret_cast<uintptr_t>(real_dlsym(RTLD_DEFAULT, "Py_Version"));
  if (v != 0 && peek_at(v, &hex) && (hex >> 24) == 3) return hex;  // unsigned long, little-endian
  return g_py.version ? parse_py_version(g_py.version()) : 0;
}

// Appends `s` to buf[*n, cap - 1).
void append(char* buf, size_t cap, size_t* n, const char* s) {
  while (*s && *n + 1 < cap) buf[(*n)++] = *s++;
}

void append_number(char* buf, size_t cap, size_t* n, uint32_t v) {
  char digits[12];
  int k = 0;
  do digits[k++] = char('0' + v % 10); while ((v /= 10) != 0 && k < 11);
  while (k > 0 && *n + 1 < cap) buf[(*n)++] = digits[--k];
}

// The one line a process prints about its Python frames, and the stat that keeps the reason; put
// together by hand (no stdio: this runs inside whichever hooked call took the first stack).
void say_refused(uint32_t version) {
  set_stat_max(trace::kStatPythonFramesRefused, uint64_t(g_layout_status));
  if (g_config.quiet) return;
  char buf[256];
  size_t n = 0;
  append(buf, sizeof buf, &n, "cuprobe: Python ");
  append_number(buf, sizeof buf, &n, version >> 24);
  append(buf, sizeof buf, &n, ".");
  append_number(buf, sizeof buf, &n, (version >> 16) & 0xff);
  append(buf, sizeof buf, &n, ": ");
  append(buf, sizeof buf, &n, layout_status_text(g_layout_status));
  append(buf, sizeof buf, &n, g_refuse_all || !g_py.ok ? "; stacks have native frames only\n"
                                           : "; stacks of threads that released the GIL have native frames only\n");
  (void)!write(STDERR_FILENO, buf, n);
}

void pick_layout() {
  if (g_py.version == nullptr || !g_py.code_type || !g_py.unicode_type || !g_py.bytes_type) return;
  uint32_t version = running_version();
  g_layout_status = LayoutStatus::kUnknownVersion;
  if (version >= 0x030d0000 && version < 0x030f0000) {
    // 3.13 and 3.14: the offsets CPython publishes for debuggers, at the start of _PyRuntime.
    auto runtime = reinterpret_cast<uintptr_t>(real_dlsym(RTLD_DEFAULT, "_PyRuntime"));
    uint8_t blob[1024];
    size_t size = debug_offsets_size(version);
    g_layout_status = runtime != 0 && size <= sizeof blob && peek(runtime, blob, size)
                          ? layout_from_debug_offsets(blob, size, version, &g_layout_storage)
                          : LayoutStatus::kNoDebugOffsets;
    if (g_layout_status == LayoutStatus::kOk) g_layout = &g_layout_storage;
  } else if (const PyLayout* fixed = fixed_py_layout(version)) {
    g_layout_status = LayoutStatus::kOk;
    g_layout = fixed;
  }
  // No free-threaded build before 3.13; from 3.13 its debug offsets say so, and its version text
  // (which is all there is when the offsets could not be read).
  if (strstr(g_py.version(), "free-threading") != nullptr) {
    g_layout_status = LayoutStatus::kFreeThreaded;
    g_layout = nullptr;
  }
  g_refuse_all = g_layout_status == LayoutStatus::kFreeThreaded;
  if (g_layout_status != LayoutStatus::kOk) say_refused(version);
}

// The innermost frame of thread state `ts`.
uintptr_t innermost_frame(const PyLayout& L, uintptr_t ts) {
  uintptr_t frame = 0;
  if (L.chain == FrameChain::kCFrame) {
    uintptr_t cframe = 0;
    if (!peek_at(ts + L.ts_frame, &cframe) || !peek_at(cframe + L.cframe_current, &frame)) return 0;
  } else if (!peek_at(ts + L.ts_frame, &frame)) {
    return 0;
  }
  return frame;
}

// The line a frame is at: `instr` is f_lasti (3.10) or the instruction pointer (3.11+).
int frame_line(const PyLayout& L, const CodeInfo& ci, uintptr_t code, uint64_t instr, int32_t first_line) {
  static __thread uint8_t table[8192];
  if (ci.table_size <= 0) return 0;
  size_t len = size_t(ci.table_size) < sizeof table ? size_t(ci.table_size) : sizeof table;
  if (!peek(ci.linetable + L.bytes_data, table, len)) return 0;
  if (L.lines == LineFormat::kLineTable310) {
    return line_from_linetable_310(table, len, first_line, int64_t(int32_t(instr)) * 2);
  }
  uintptr_t start = code + L.co_code_adaptive;
  int64_t unit = instr >= start ? int64_t(instr - start) / 2 : -1;
  return unit < 0 ? first_line : line_from_locations(table, len, first_line, unit);
}

int python_frames_raw(trace::PyFrame* out) {
  if (g_layout == nullptr || g_py.this_thread_state == nullptr) return 0;
  const PyLayout& L = *g_layout;
  uintptr_t frame = innermost_frame(L, reinterpret_cast<uintptr_t>(g_py.this_thread_state()));
  bool heap = L.chain == FrameChain::kHeapFrames;
  int n = 0;
  for (int hops = 0; frame != 0 && n < kMaxPython && hops < 256; ++hops) {
    uint8_t f[kMaxFrameRead];
    if (!peek(frame, f, L.frame_read)) break;
    uintptr_t code = field_at<uintptr_t>(f, L.f_code) & L.code_mask;
    uint64_t instr = heap ? uint64_t(field_at<int32_t>(f, L.f_instr)) : field_at<uintptr_t>(f, L.f_instr);
    frame = field_at<uintptr_t>(f, L.f_previous);
    if (!heap && f[L.f_owner] >= kFirstForeignOwner) continue;  // an entry frame of the C stack
    uint8_t c[kMaxCodeRead];
    if (!peek(code, c, L.code_read) || field_at<uintptr_t>(c, L.ob_type) != g_py.code_type) continue;
    auto filename = field_at<uintptr_t>(c, L.co_filename);
    auto name = field_at<uintptr_t>(c, L.co_name);
    auto linetable = field_at<uintptr_t>(c, L.co_linetable);
    CodeInfo& ci = t_codes[(code >> 4) % kCodeSlots];
    if (ci.code != code || ci.filename != filename || ci.name != name || ci.linetable != linetable) {
      uintptr_t type = 0;
      int64_t size = 0;
      bool bytes = peek_at(linetable + L.ob_type, &type) && type == g_py.bytes_type &&
                   peek_at(linetable + L.bytes_size, &size);
      bool library = true;
      uint32_t file_sid = peek_str(filename, &library);
      ci = CodeInfo{code, filename, name, linetable, file_sid, peek_str(name), bytes ? size : 0, library};
    }
    if (ci.file_sid == 0) continue;
    out[n].file = ci.file_sid;
    out[n].function = ci.name_sid;
    out[n].line = frame_line(L, ci, code, instr, field_at<int32_t>(c, L.co_firstlineno));
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
  if (!g_py.ok || g_refuse_all || !g_py.is_initialized()) return 0;
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

namespace {

// A probe another thread had under way when the process forked never ends in the child. The
// forking thread's code cache names strings by their ids in the parent's file: the child's file
// has none of them (its strings are interned anew), so the cache starts empty.
void python_frames_after_fork() {
  if (__atomic_load_n(&g_py_probed, __ATOMIC_RELAXED) == 1) __atomic_store_n(&g_py_probed, 0u, __ATOMIC_RELAXED);
  memset(t_codes, 0, sizeof t_codes);
}
CUPROBE_FORK_CHILD_RESET(python_frames_after_fork);

}  // namespace

}  // namespace cuprobe::shim
