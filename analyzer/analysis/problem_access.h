// The cuDNN problem a call names, as the analysis reads it: every use the trackers make of a
// call's problem (its identity, its text, its layer) goes through these few functions.
//
// A call names its problem by id (field "problem", type 'q': a ProblemRecord of the trace, or a
// problem a JSON Lines input named by its text); reader::Trace::problem gives the typed problem
// with its hash and rendered text, trace/problem_view.h its layer and shape.
#pragma once

#include <cstdint>
#include <string>

#include "trace/reader.h"

namespace cuprobe::analysis {

struct ApiView;  // trackers/api_view.h

// Where an API's calls keep their problem, resolved once per trace (ApiView::problem).
struct ProblemFields {
  int id = -1;  // "problem"
};
ProblemFields problem_fields(const reader::Api& api);

// Whether calls of this API name a problem at all.
bool names_problem(const ApiView& v);
// The typed problem the call names, nullptr when none (or unknown).
const reader::Problem* problem_of(const reader::Trace& trace, const reader::Event& e, const ApiView& v);
// The problem's identity; 0 when the call names none.
uint64_t problem_hash_of(const reader::Trace& trace, const reader::Event& e, const ApiView& v);
// The problem's text ("conv_fwd x[16,64,32,32]f32 nchw ..."), "" when unknown. The reference
// stays valid while the trace does.
const std::string& problem_text_of(const reader::Trace& trace, const reader::Event& e, const ApiView& v);
// The problem's layer whatever its input size (reader::layer_key); never 0.
uint64_t layer_of(const reader::Trace& trace, const reader::Event& e, const ApiView& v);

}  // namespace cuprobe::analysis
