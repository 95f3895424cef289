// CPython frame layouts per version: see python_layout.h. The fixed tables were taken from the
// headers of 3.10.13, 3.11.7 and 3.12.1 (offsetof over Include/cpython/*.h and
// Include/internal/pycore_frame.h, x86-64 and aarch64 alike: LP64, no packing); a micro version
// never changes them (CPython keeps these structures stable within a minor version).
#include "python_layout.h"

#include <string.h>

namespace cuprobe::shim {

namespace {

constexpr PyLayout kFixed[] = {
    // 3.10: heap-allocated PyFrameObject (Include/cpython/frameobject.h), PEP 626 line table.
    {.version = 0x030a0000, .chain = FrameChain::kHeapFrames, .lines = LineFormat::kLineTable310,
     .from_debug_offsets = false, .ts_frame = 24, .cframe_current = 0, .frame_read = 104, .f_code = 32,
     .f_previous = 24, .f_instr = 96, .f_owner = 0, .code_mask = ~uintptr_t(0), .code_read = 128,
     .co_filename = 104, .co_name = 112, .co_firstlineno = 40, .co_linetable = 120, .co_code_adaptive = 0,
     .ob_type = 8, .str_length = 16, .str_state = 32, .str_ascii_data = 48, .bytes_size = 16, .bytes_data = 32},
    // 3.11: _PyInterpreterFrame on the thread's data stack, reached through _PyCFrame.
    {.version = 0x030b0000, .chain = FrameChain::kCFrame, .lines = LineFormat::kLocations,
     .from_debug_offsets = false, .ts_frame = 56, .cframe_current = 8, .frame_read = 72, .f_code = 32,
     .f_previous = 48, .f_instr = 56, .f_owner = 69, .code_mask = ~uintptr_t(0), .code_read = 184,
     .co_filename = 112, .co_name = 120, .co_firstlineno = 72, .co_linetable = 136, .co_code_adaptive = 184,
     .ob_type = 8, .str_length = 16, .str_state = 32, .str_ascii_data = 48, .bytes_size = 16, .bytes_data = 32},
    // 3.12: the frame's fields reordered; PyASCIIObject lost wstr.
    {.version = 0x030c0000, .chain = FrameChain::kCFrame, .lines = LineFormat::kLocations,
     .from_debug_offsets = false, .ts_frame = 56, .cframe_current = 0, .frame_read = 72, .f_code = 0,
     .f_previous = 8, .f_instr = 56, .f_owner = 70, .code_mask = ~uintptr_t(0), .code_read = 192,
     .co_filename = 112, .co_name = 120, .co_firstlineno = 68, .co_linetable = 136, .co_code_adaptive = 192,
     .ob_type = 8, .str_length = 16, .str_state = 32, .str_ascii_data = 40, .bytes_size = 16, .bytes_data = 32},
};

// _Py_DebugOffsets as 3.13 declares it (Include/internal/pycore_runtime.h, v3.13.0): a cookie, the
// version, then groups of 64-bit offsets, each group starting with its structure's size. Only the
// groups up to the str's are mirrored; the table goes on (gc) and nothing here reads past them.
struct DebugOffsets313 {
  char cookie[8];
  uint64_t version, free_threaded;
  struct { uint64_t size, finalizing, interpreters_head; } runtime_state;
  struct {
    uint64_t size, id, next, threads_head, gc, imports_modules, sysdict, builtins, ceval_gil, gil_runtime_state,
        gil_runtime_state_enabled, gil_runtime_state_locked, gil_runtime_state_holder;
  } interpreter_state;
  struct {
    uint64_t size, prev, next, interp, current_frame, thread_id, native_thread_id, datastack_chunk, status;
  } thread_state;
  struct { uint64_t size, previous, executable, instr_ptr, localsplus, owner; } interpreter_frame;
  struct {
    uint64_t size, filename, name, qualname, linetable, firstlineno, argcount, localsplusnames, localspluskinds,
        co_code_adaptive;
  } code_object;
  struct { uint64_t size, ob_type; } pyobject;
  struct { uint64_t size, tp_name, tp_repr, tp_flags; } type_object;
  struct { uint64_t size, ob_item, ob_size; } tuple_object;
  struct { uint64_t size, ob_item, ob_size; } list_object;
  struct { uint64_t size, ma_keys, ma_values; } dict_object;
  struct { uint64_t size, ob_fval; } float_object;
  struct { uint64_t size, lv_tag, ob_digit; } long_object;
  struct { uint64_t size, ob_size, ob_sval; } bytes_object;
  struct { uint64_t size, state, length, asciiobject_size; } unicode_object;
};
static_assert(sizeof(DebugOffsets313) == 24 + 8 * 68);

// 3.14 (Include/internal/pycore_debug_offsets.h, v3.14.0) added fields inside groups, so every
// group after the interpreter's moved: threads_main, code_object_generation and tlbc_generation
// (interpreter), stackpointer and tlbc_index (frame), co_tlbc (code), and a set group.
struct DebugOffsets314 {
  char cookie[8];
  uint64_t version, free_threaded;
  struct { uint64_t size, finalizing, interpreters_head; } runtime_state;
  struct {
    uint64_t size, id, next, threads_head, threads_main, gc, imports_modules, sysdict, builtins, ceval_gil,
        gil_runtime_state, gil_runtime_state_enabled, gil_runtime_state_locked, gil_runtime_state_holder,
        code_object_generation, tlbc_generation;
  } interpreter_state;
  struct {
    uint64_t size, prev, next, interp, current_frame, thread_id, native_thread_id, datastack_chunk, status;
  } thread_state;
  struct { uint64_t size, previous, executable, instr_ptr, localsplus, owner, stackpointer, tlbc_index; } interpreter_frame;
  struct {
    uint64_t size, filename, name, qualname, linetable, firstlineno, argcount, localsplusnames, localspluskinds,
        co_code_adaptive, co_tlbc;
  } code_object;
  struct { uint64_t size, ob_type; } pyobject;
  struct { uint64_t size, tp_name, tp_repr, tp_flags; } type_object;
  struct { uint64_t size, ob_item, ob_size; } tuple_object;
  struct { uint64_t size, ob_item, ob_size; } list_object;
  struct { uint64_t size, used, table, mask; } set_object;
  struct { uint64_t size, ma_keys, ma_values; } dict_object;
  struct { uint64_t size, ob_fval; } float_object;
  struct { uint64_t size, lv_tag, ob_digit; } long_object;
  struct { uint64_t size, ob_size, ob_sval; } bytes_object;
  struct { uint64_t size, state, length, asciiobject_size; } unicode_object;
};
static_assert(sizeof(DebugOffsets314) == 24 + 8 * 78);

constexpr char kCookie[8] = {'x', 'd', 'e', 'b', 'u', 'g', 'p', 'y'};

// A field of `width` bytes at `off` lies inside a structure of `size` bytes, naturally aligned.
bool inside(uint64_t off, uint64_t width, uint64_t size) {
  return off % width == 0 && off <= size && width <= size - off;
}

uint64_t max_of(uint64_t a, uint64_t b) { return a > b ? a : b; }

// The groups every supported table has, whatever else moved around them.
template <typename D>
LayoutStatus fill(const D& d, uint32_t version, PyLayout* out) {
  const auto& ts = d.thread_state;
  const auto& fr = d.interpreter_frame;
  const auto& co = d.code_object;
  const auto& ob = d.pyobject;
  const auto& by = d.bytes_object;
  const auto& un = d.unicode_object;
  bool ok = ts.size <= 65536 && inside(ts.current_frame, 8, ts.size) &&
            fr.size <= 1024 && inside(fr.previous, 8, fr.size) && inside(fr.executable, 8, fr.size) &&
            inside(fr.instr_ptr, 8, fr.size) && inside(fr.owner, 1, fr.size) &&
            co.size <= 4096 && co.co_code_adaptive < co.size && co.co_code_adaptive % 2 == 0 && co.co_code_adaptive <= kMaxCodeRead &&
            inside(co.filename, 8, co.co_code_adaptive) && inside(co.name, 8, co.co_code_adaptive) &&
            inside(co.linetable, 8, co.co_code_adaptive) && inside(co.firstlineno, 4, co.co_code_adaptive) &&
            ob.size <= 64 && inside(ob.ob_type, 8, ob.size) &&
            by.size <= 128 && inside(by.ob_size, 8, by.ob_sval) && by.ob_sval % 8 == 0 && by.ob_sval < by.size &&
            un.asciiobject_size >= 24 && un.asciiobject_size <= 128 && un.asciiobject_size % 8 == 0 && un.asciiobject_size <= un.size &&
            inside(un.length, 8, un.asciiobject_size) && inside(un.state, 4, un.asciiobject_size);
  uint64_t frame_read = max_of(max_of(fr.previous, fr.executable), fr.instr_ptr) + 8;
  frame_read = max_of(frame_read, fr.owner + 1);
  if (!ok || frame_read > kMaxFrameRead) return LayoutStatus::kBadOffsets;
  PyLayout l{};
  l.version = py_minor_version(version);
  l.chain = FrameChain::kCurrentFrame;
  l.lines = LineFormat::kLocations;
  l.from_debug_offsets = true;
  l.ts_frame = uint16_t(ts.current_frame);
  l.frame_read = uint16_t(frame_read);
  l.f_code = uint16_t(fr.executable);
  l.f_previous = uint16_t(fr.previous);
  l.f_instr = uint16_t(fr.instr_ptr);
  l.f_owner = uint16_t(fr.owner);
  // 3.14's f_executable is a _PyStackRef: its low bit tags a deferred reference (Py_TAG_BITS 1 in
  // GIL builds; 3.15 widens it to 2 bits). Objects are at least 8-byte aligned, so 2 bits are cleared.
  l.code_mask = py_minor_version(version) >= 0x030e0000 ? ~uintptr_t(3) : ~uintptr_t(0);
  l.code_read = uint16_t(co.co_code_adaptive);
  l.co_filename = uint16_t(co.filename);
  l.co_name = uint16_t(co.name);
  l.co_firstlineno = uint16_t(co.firstlineno);
  l.co_linetable = uint16_t(co.linetable);
  l.co_code_adaptive = uint16_t(co.co_code_adaptive);
  l.ob_type = uint16_t(ob.ob_type);
  l.str_length = uint16_t(un.length);
  l.str_state = uint16_t(un.state);
  l.str_ascii_data = uint16_t(un.asciiobject_size);
  l.bytes_size = uint16_t(by.ob_size);
  l.bytes_data = uint16_t(by.ob_sval);
  *out = l;
  return LayoutStatus::kOk;
}

template <typename D>
LayoutStatus parse(const uint8_t* blob, size_t n, uint32_t running, PyLayout* out) {
  D d;
  if (n < sizeof d) return LayoutStatus::kNoDebugOffsets;
  memcpy(&d, blob, sizeof d);
  if (memcmp(d.cookie, kCookie, sizeof kCookie) != 0) return LayoutStatus::kNoDebugOffsets;
  // Py_Version gives the whole PY_VERSION_HEX; a version read from Py_GetVersion() has no release
  // level and serial, so only major.minor.micro can be compared then.
  uint64_t mask = (running & 0xff) ? 0xffffffffu : 0xffffff00u;
  if ((d.version & mask) != (running & mask) || (d.version >> 32) != 0) return LayoutStatus::kVersionMismatch;
  if (d.free_threaded != 0) return LayoutStatus::kFreeThreaded;
  return fill(d, running, out);
}

}  // namespace

const char* layout_status_text(LayoutStatus s) {
  switch (s) {
    case LayoutStatus::kOk: return "ok";
    case LayoutStatus::kUnknownVersion: return "no frame layout known for this CPython version";
    case LayoutStatus::kFreeThreaded: return "a free-threaded CPython build";
    case LayoutStatus::kNoDebugOffsets: return "no _Py_DebugOffsets table in _PyRuntime";
    case LayoutStatus::kVersionMismatch: return "_Py_DebugOffsets declares another CPython version";
    case LayoutStatus::kBadOffsets: return "_Py_DebugOffsets holds offsets outside their structures";
  }
  return "?";
}

uint32_t parse_py_version(const char* text) {
  uint32_t part[3] = {0, 0, 0};
  int i = 0;
  const char* p = text;
  for (; i < 3; ++i) {
    if (*p < '0' || *p > '9') break;
    uint32_t v = 0;
    while (*p >= '0' && *p <= '9' && v < 1000) v = v * 10 + uint32_t(*p++ - '0');
    part[i] = v;
    if (*p != '.') {
      ++i;
      break;
    }
    ++p;
  }
  if (i < 2 || part[0] > 255 || part[1] > 255 || part[2] > 255) return 0;
  return part[0] << 24 | part[1] << 16 | part[2] << 8;
}

const PyLayout* fixed_py_layout(uint32_t hexversion) {
  for (const PyLayout& l : kFixed) {
    if (l.version == py_minor_version(hexversion)) return &l;
  }
  return nullptr;
}

size_t debug_offsets_size(uint32_t hexversion) {
  switch (py_minor_version(hexversion)) {
    case 0x030d0000: return sizeof(DebugOffsets313);
    case 0x030e0000: return sizeof(DebugOffsets314);
    default: return 0;
  }
}

LayoutStatus layout_from_debug_offsets(const uint8_t* blob, size_t n, uint32_t running, PyLayout* out) {
  switch (py_minor_version(running)) {
    case 0x030d0000: return parse<DebugOffsets313>(blob, n, running, out);
    case 0x030e0000: return parse<DebugOffsets314>(blob, n, running, out);
    default: return LayoutStatus::kUnknownVersion;
  }
}

}  // namespace cuprobe::shim
