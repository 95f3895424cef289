// Where CPython keeps what a stack needs from a thread's Python frames: thread state → innermost
// frame → previous frame, the frame's code object and instruction, the code object's file name,
// function name, first line and line table, and the text of a compact ASCII str. One PyLayout per
// running interpreter, chosen once when the shim first takes a stack (python_frames.cpp):
//   - 3.10, 3.11, 3.12: fixed tables, the offsets of their headers on 64-bit Linux;
//   - 3.13 and 3.14: read from the `_Py_DebugOffsets` table CPython publishes at the start of
//     `_PyRuntime` (what py-spy and pystack read), after checking its cookie, that the version it
//     declares is the running one, that the build is not free-threaded, and that every offset lies
//     inside the structure it belongs to;
//   - anything else (3.9 and older, 3.15+, a free-threaded build): no layout, and the reason why.
// Everything here is plain data and pure functions: no allocation, no system calls.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace cuprobe::shim {

enum class FrameChain : uint8_t {
  kHeapFrames,    // 3.10: PyThreadState.frame → PyFrameObject; f_back; f_lasti, an instruction index
  kCFrame,        // 3.11, 3.12: PyThreadState.cframe → _PyCFrame.current_frame → _PyInterpreterFrame
  kCurrentFrame,  // 3.13+: PyThreadState.current_frame → _PyInterpreterFrame
};

enum class LineFormat : uint8_t {
  kLineTable310,  // PEP 626 co_linetable (3.10)
  kLocations,     // PEP 657 location table (3.11+)
};

// Frame owners from here on are not Python code: 3.12/3.13 FRAME_OWNED_BY_CSTACK (3); 3.14
// FRAME_OWNED_BY_INTERPRETER (3) and FRAME_OWNED_BY_CSTACK (4). 3.11 has owners 0 to 2 only.
inline constexpr uint8_t kFirstForeignOwner = 3;

// The largest pieces the reader copies at once; a layout whose offsets need more is refused.
inline constexpr size_t kMaxFrameRead = 128;
inline constexpr size_t kMaxCodeRead = 256;

struct PyLayout {
  uint32_t version;  // PY_VERSION_HEX of the interpreter this layout was made for (major, minor)
  FrameChain chain;
  LineFormat lines;
  bool from_debug_offsets;  // read from _Py_DebugOffsets rather than a fixed table
  uint16_t ts_frame;        // PyThreadState: frame (3.10), cframe (3.11, 3.12), current_frame (3.13+)
  uint16_t cframe_current;  // _PyCFrame.current_frame (kCFrame only)
  // The frame: read as one piece of frame_read bytes.
  uint16_t frame_read;
  uint16_t f_code;      // f_code (≤ 3.12) or f_executable (3.13+, a _PyStackRef in 3.14)
  uint16_t f_previous;  // f_back (3.10) or previous
  uint16_t f_instr;     // f_lasti (3.10, int32), prev_instr (3.11, 3.12) or instr_ptr (3.13+)
  uint16_t f_owner;     // owner (char; 3.11+)
  uintptr_t code_mask;  // applied to f_code: clears the tag bits of a 3.14 _PyStackRef
  // The code object: its first code_read bytes, up to the bytecode (3.11+) or past co_linetable.
  uint16_t code_read;
  uint16_t co_filename, co_name, co_firstlineno, co_linetable;
  uint16_t co_code_adaptive;  // where the bytecode starts (3.11+): instruction pointers point into it
  uint16_t ob_type;
  uint16_t str_length, str_state, str_ascii_data;  // str_ascii_data: sizeof(PyASCIIObject)
  uint16_t bytes_size, bytes_data;
};

enum class LayoutStatus : uint8_t {
  kOk = 0,
  kUnknownVersion,   // no layout known for this version: native frames only
  kFreeThreaded,     // a free-threaded build (3.13t, 3.14t): refused
  kNoDebugOffsets,   // 3.13+ without a readable _PyRuntime or without the "xdebugpy" cookie
  kVersionMismatch,  // _Py_DebugOffsets declares another version than the one running
  kBadOffsets,       // an offset outside its structure, or a size beyond what is sane
};
const char* layout_status_text(LayoutStatus s);

// PY_VERSION_HEX's major and minor, the way layouts are chosen.
constexpr uint32_t py_minor_version(uint32_t hex) { return hex & 0xffff0000u; }

// The version of a Py_GetVersion() string ("3.12.3 (main, ...)") as PY_VERSION_HEX with only
// major, minor and micro; 0 when it cannot be read.
uint32_t parse_py_version(const char* text);

// The fixed layout of 3.10, 3.11 or 3.12 (any micro version); nullptr for any other version.
const PyLayout* fixed_py_layout(uint32_t hexversion);

// The debug-offsets table a 3.13+ interpreter publishes at the start of _PyRuntime: how many bytes
// of it to read for the running version (0 for versions whose table is not known here).
size_t debug_offsets_size(uint32_t hexversion);

// A layout from a copy of the first `n` bytes of _PyRuntime, for the interpreter whose
// PY_VERSION_HEX is `running` (from Py_Version; its release level and serial may be 0 when only
// Py_GetVersion() was available). *out is written only with kOk.
LayoutStatus layout_from_debug_offsets(const uint8_t* blob, size_t n, uint32_t running, PyLayout* out);

}  // namespace cuprobe::shim
