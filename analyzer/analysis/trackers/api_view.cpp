// The views of a trace's APIs; see api_view.h.
#include "analysis/trackers/api_view.h"

namespace cuprobe::analysis {

ApiViews::ApiViews(const reader::Trace& trace) {
  const auto& apis = trace.apis();
  views_.resize(apis.size());
  for (size_t id = 0; id < apis.size(); ++id) {
    const reader::Api& a = apis[id];
    ApiView& v = views_[id];
    v.api = &a;
    v.flags = a.flags;
    v.cudnn = a.library == trace::Library::kCudnn;
    v.backend_execute = (a.flags & trace::kApiPlanExecute) != 0;
    v.finalize = (a.flags & trace::kApiPlanFinalize) != 0;
    v.legacy_exec = (a.flags & trace::kApiLegacyConvExec) != 0;
    v.blas_matmul = (a.flags & trace::kApiBlasMatmul) != 0;
    v.physical = (a.flags & trace::kApiPhysical) != 0;
    v.ptr = a.field_index("ptr");
    if (v.ptr < 0) v.ptr = a.field_index("handle");
    v.caller = a.field_index("caller");
    v.free_bytes = a.field_index("free");
    v.total = a.field_index("total");
    v.size = a.field_index("size");
    v.allocated = a.field_index("allocated");
    v.reserved = a.field_index("reserved");
    v.pool = a.field_index("pool");
    v.attr = a.field_index("attr");
    v.value = a.field_index("value");
    v.engine = a.field_index("engine");
    v.knobs = a.field_index("knobs");
    v.algo = a.field_index("algo");
    v.align = a.field_index("align");
    v.plan = a.field_index("plan");
    v.desc = a.field_index("desc");
    v.problem = problem_fields(a);
  }
}

}  // namespace cuprobe::analysis
