// libFuzzer target: the JSON Lines trace reader (analyzer/trace/jsonl_trace.cpp) on arbitrary
// bytes. Everything a reader of the traces touches is visited: each process's metadata, every
// event with its arguments, the stacks, fault rules and strings they refer to, the diagnostics,
// and a facts file's facts read back (analysis/facts_io.cpp).
// A crash, a sanitizer report, an exception that escapes or a message longer than the reader's
// bound on quoting is a finding.
//
//   clang++ -std=c++20 -fsanitize=fuzzer,address,undefined -DFMT_HEADER_ONLY \
//     -Ianalyzer -Ishim -Icommon -Ischema tests/fuzz/jsonl_fuzz.cpp \
//     analyzer/trace/jsonl_trace.cpp analyzer/trace/reader.cpp -o jsonl_fuzz
//   ./jsonl_fuzz -max_len=65536 CORPUS_DIR   (seeds: rules/fixtures/*/*/*.jsonl)
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "analysis/facts_io.h"
#include "trace/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cuprobe::reader;
  std::string text(reinterpret_cast<const char*>(data), size);
  auto traces = read_jsonl_text(text, "fuzz.jsonl");
  if (!traces) {
    if (traces.error().message.size() > 4096) std::abort();  // inputs are quoted in excerpts only
    return 0;
  }
  volatile uint64_t sink = 0;
  for (const auto& t : *traces) {
    for (const auto& d : t->diagnostics()) {
      if (d.size() > 1024) std::abort();
    }
    sink = sink + t->process().cmdline.size() + t->devices().size() + t->counts().size() + t->crashes().size();
    for (const auto& c : t->counts()) sink = sink + t->api_name(c.api).size();
    for (const auto& [id, st] : t->stacks()) sink = sink + st.pcs.size() + st.python.size() + id;
    // A facts file's facts, read back as the analysis reads them: an error or facts, never a crash.
    if (t->facts() != nullptr) {
      auto f = cuprobe::analysis::facts_from_json(*t->facts(), *t);
      if (f) {
        sink = sink + f->searches.size() + f->problems.size() + f->churn_call_ts.size();
      } else if (f.error().message.empty()) {
        std::abort();
      }
    }
    t->for_each_event([&](const Event& e) {
      const Api* api = t->api(e.api);
      if (e.nargs < 0 || (api && size_t(e.nargs) > api->fields.size())) std::abort();
      for (int i = 0; i < e.nargs; ++i) {
        sink = sink + e.args[i];
        if (api && api->fields[size_t(i)].type == 's') sink = sink + t->string(StringId(uint32_t(e.args[i]))).size();
      }
      if (const Stack* st = t->stack(e.stack)) sink = sink + st->pcs.size();
      if (e.injected() && t->fault_rule(e.fault_rule) == nullptr) std::abort();
      sink = sink + e.ts_ns + e.dur_ns + e.tid + t->api_name(e.api).size();
    });
    t->release_events();
  }
  return 0;
}
