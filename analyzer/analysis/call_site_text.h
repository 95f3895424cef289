// Call sites as a person reads them in the text report (`cuprobe analyze` without --json): a
// native frame by its function's last two name components, without namespaces further out,
// template arguments, parameter lists or the module; Python frames as they are.
//
//   c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::alloc_block(
//       c10::cuda::CUDACachingAllocator::Native::AllocParams&, bool, ...) (libc10_cuda.so)
//   -> DeviceCachingAllocator::alloc_block
//
// The contract: these functions read the text Symbolizer::text and Symbolizer::describe write
// for a frame (trace/symbolize.h: "fn [at file:line] {inlined into fn [at file:line]} (module)",
// "file.py:12 in fn") and the call sites analysis/common.h's top_sites and the rules compose from
// them ("88 late searches from: " then frames joined by " < "). The report applies them when it
// prints; Finding::call_sites, and with it --json, the HTML report and the exports, keep the full
// frames. Anything they cannot read is given back as it came: shortening never loses a frame.
#pragma once

#include <string>
#include <string_view>

namespace cuprobe::analysis {

// A demangled C++ (or C) function name cut to its last two `::` components, without template
// arguments, ABI tags, parameter lists, qualifiers, a return type or a clone suffix; anonymous
// namespaces are left out and a lambda's call operator is the lambda ("foo::{lambda#1}"). A
// name Symbolizer::text cut short ("...") keeps its "..." when the cut fell inside the name.
std::string short_function(std::string_view demangled);

// One frame of a call site for people: a native frame as its short function name, with " at
// file:line" when that is short, and its module only when no function is known ("0x1a2b
// (libcudnn.so.9)"); a Python frame ("train.py:12 in step") as it is.
std::string short_frame(std::string_view frame);

// A composed call site ("88 late searches from: train.py:12 in step < at::foo(int) (libx.so)")
// with each frame shortened; what comes before the first ": " is kept when it reads as words.
std::string short_call_site(std::string_view site);

}  // namespace cuprobe::analysis
