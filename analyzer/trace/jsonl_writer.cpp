// See jsonl_writer.h.
#include "trace/jsonl_writer.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace cuprobe::jsonl {

namespace {

std::string int_list(const auto* v, int n) {
  std::string out = "[";
  for (int i = 0; i < n; ++i) out += fmt::format("{}{}", i ? "," : "", int64_t(v[i]));
  return out + "]";
}

}  // namespace

void write_module_line(JsonLine& j, uint32_t pid, const std::string& path, uint64_t start, uint64_t end, uint64_t bias,
                       const std::string& build_id, std::FILE* out) {
  j.begin();
  j.str("type", "module");
  j.num("pid", pid);
  j.str("path", path);
  j.hex("start", start);
  j.hex("end", end);
  j.hex("bias", bias);
  if (!build_id.empty()) j.str("build_id", build_id);
  j.end(out);
}

void write_pin_line(JsonLine& j, const PinLine& p, std::FILE* out) {
  j.begin();
  j.str("type", "pin");
  j.num("pid", p.pid);
  j.num("tid", p.tid);
  j.num("ts_ns", p.ts_ns);
  j.str("outcome", p.outcome);
  j.str("problem", p.problem);
  j.str("hash", fmt::format("0x{:016x}", p.hash));
  j.inum("engine", p.engine);
  if (!p.knobs.empty()) j.str("knobs", p.knobs);
  if (p.legacy) j.raw("legacy", "true");
  if (p.answered) j.raw("answered", "true");
  if (p.pinned_ms >= 0) j.raw("pinned_ms", fmt::format("{:.4f}", p.pinned_ms));
  if (p.search_ms >= 0) j.raw("search_ms", fmt::format("{:.3f}", p.search_ms));
  if (p.replaced_ms >= 0) j.raw("replaced_ms", fmt::format("{:.4f}", p.replaced_ms));
  if (p.moved) j.raw("moved", "true");
  if (p.no_fallback) j.raw("no_fallback", "true");
  j.end(out);
}

void write_problem_line(JsonLine& j, uint32_t pid, uint64_t hash, const std::string& text,
                        const trace::ProblemDesc* desc, std::FILE* out) {
  j.begin();
  j.str("type", "problem");
  j.num("pid", pid);
  j.hex("hash", hash);
  j.str("text", text);
  if (desc != nullptr) {
    const trace::ProblemDesc& d = *desc;
    std::string desc_json = fmt::format("{{\"op\":{},\"flags\":{},\"math_type\":{}", d.op, d.flags, d.math_type);
    if (d.flags & trace::kProblemHasConv) {
      const trace::ProblemConv& c = d.conv;
      int n = c.spatial >= 1 && c.spatial <= 3 ? c.spatial : 2;
      desc_json += fmt::format(",\"conv\":{{\"mode\":{},\"compute\":{},\"spatial\":{},\"groups\":{},\"pre\":{},"
                               "\"post\":{},\"stride\":{},\"dilation\":{}}}",
                               c.mode, c.compute, c.spatial, c.groups, int_list(c.pre, n), int_list(c.post, n),
                               int_list(c.stride, n), int_list(c.dilation, n));
    }
    desc_json += ",\"tensors\":[";
    for (int i = 0; i < d.n_tensors && i < trace::kProblemMaxTensors; ++i) {
      const trace::ProblemTensor& x = d.tensors[i];
      int n = x.nbdims <= trace::kProblemMaxDims ? x.nbdims : trace::kProblemMaxDims;
      desc_json += fmt::format("{}{{\"role\":{},\"dtype\":{},\"layout\":{},\"dims\":{},\"strides\":{}}}", i ? "," : "",
                               x.role, x.dtype, x.layout, int_list(x.dims, n), int_list(x.strides, n));
    }
    desc_json += "]";
    if (d.n_fused) {
      desc_json += ",\"fused\":[";
      for (int i = 0; i < d.n_fused && i < trace::kProblemMaxFused; ++i) {
        desc_json += fmt::format("{}{{\"op\":{},\"mode\":{}}}", i ? "," : "", d.fused[i].op, d.fused[i].mode);
      }
      desc_json += "]";
    }
    if (d.n_params) {
      desc_json += ",\"params\":" + int_list(d.params, std::min<int>(d.n_params, trace::kProblemMaxParams));
    }
    desc_json += "}";
    j.raw("desc", desc_json);
  }
  j.end(out);
}

void write_call_line(JsonLine& j, const CallLine& c, std::FILE* out) {
  j.begin();
  j.str("type", "call");
  j.str("api", c.api);
  j.inum("ret", c.ret);
  j.num("ts_ns", c.ts_ns);
  j.num("dur_ns", c.dur_ns);
  j.num("pid", c.pid);
  j.num("tid", c.tid);
  j.inum("device", c.device);
  if (c.stream) j.hex("stream", *c.stream);
  for (const auto& [name, v] : c.fields) {
    switch (v.kind) {
      case CallValue::Kind::kInt: j.inum(name, int64_t(v.bits)); break;
      case CallValue::Kind::kUnsigned: j.num(name, v.bits); break;
      case CallValue::Kind::kHex: j.hex(name, v.bits); break;
      case CallValue::Kind::kBool: j.boolean(name, v.bits != 0); break;
      case CallValue::Kind::kText:
      case CallValue::Kind::kProblem: j.str(name, v.text); break;
      case CallValue::Kind::kFloat: {
        if (v.real != v.real || v.real - v.real != 0) {  // JSON has no NaN or infinity
          j.raw(name, "null");
          break;
        }
        std::string s = fmt::format("{}", v.real);
        if (s.find_first_of(".e") == std::string::npos) s += ".0";
        j.raw(name, s);
        break;
      }
    }
  }
  j.end(out);
}

}  // namespace cuprobe::jsonl
