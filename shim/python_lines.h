// Line numbers from a CPython code object's line table, for the frames python_frames.cpp reads
// from the interpreter's structures. Two formats: CPython 3.10's PEP 626 table (pairs of a byte
// delta and a signed line delta; Objects/lnotab_notes.txt) and the PEP 657 location table of 3.11
// and later (Objects/locations.md; unchanged through 3.14). Pure functions over a copy of the
// table: no allocation, no system call, bounded by the table's length, so a damaged table gives 0
// (no line), never a fault or a loop.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace cuprobe::shim {

// 3.10: the line of the instruction at byte offset `offset` (f_lasti * 2); 0 when none.
int line_from_linetable_310(const uint8_t* table, size_t n, int first_line, int64_t offset);

// 3.11+: the line of code unit `unit` (instruction pointer minus co_code_adaptive, in 2-byte code
// units); 0 when none.
int line_from_locations(const uint8_t* table, size_t n, int first_line, int64_t unit);

}  // namespace cuprobe::shim
