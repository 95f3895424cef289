// What the shim, the test doubles and the tests derive from the hook tables beyond the shared
// API table (cuprobe/api_table.h: ids, names, libraries, role flags): driver entry-point
// queries, and the slots of kinds that are counted rather than recorded.
//
// The tables themselves are the X-macro lists in schema/cuprobe/hooks/.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <stdint.h>

#include "cudart_internal.h"
#include "cuprobe/api_table.h"

namespace cuprobe {

// c10::Device as PyTorch passes it by value (c10/core/Device.h): device type, then index.
struct C10Device {
  int8_t type;
  int8_t index;
};

// ApiId, kApis and the flags' short names: cuprobe/api_table.h.

// How an entry-point lookup names each driver function (CUPROBE_DRIVER_QUERIES): the shim hands
// out wrappers by it, and the driver test double answers lookups by it.
struct DriverQuery {
  ApiId api;
  const char* name;  // as cuGetProcAddress takes it: "cuMemAlloc" for cuMemAlloc_v2
  int min_version;   // the first version for which the lookup returns this function
  bool per_thread;   // the per-thread-default-stream variant
};
#define CUPROBE_DRIVER_QUERY(api, name, version, ptsz) DriverQuery{ApiId::api, name, version, ptsz},
inline constexpr DriverQuery kDriverQueries[] = {CUPROBE_DRIVER_QUERIES(CUPROBE_DRIVER_QUERY)};
#undef CUPROBE_DRIVER_QUERY
#define CUPROBE_ONE(...) +1
static_assert(sizeof(kDriverQueries) / sizeof(kDriverQueries[0]) == 0 CUPROBE_DRIVER_HOOKS(CUPROBE_ONE),
              "driver_hooks.h: every driver hook needs a line in CUPROBE_DRIVER_QUERIES");
#undef CUPROBE_ONE

// Counted APIs get consecutive rows of each chunk's per-device count table, quiet APIs
// consecutive slots of its plain count table, both in table order.
inline constexpr int kNoCountSlot = -1;
constexpr uint64_t slot_class(uint64_t flags) { return flags & (trace::kApiCounted | trace::kApiQuiet); }
constexpr int count_slot(ApiId id) {
  uint64_t cls = slot_class(kApis[int(id)].flags);
  if (cls == 0) return kNoCountSlot;
  int slot = 0;
  for (int i = 0; i < int(id); ++i) slot += slot_class(kApis[i].flags) == cls ? 1 : 0;
  return slot;
}
constexpr int apis_with(uint64_t flag) {
  int n = 0;
  for (const auto& a : kApis) n += (a.flags & flag) ? 1 : 0;
  return n;
}
static_assert(apis_with(trace::kApiCounted) <= trace::kCountSlots, "raise trace::kCountSlots");
static_assert(apis_with(trace::kApiQuiet) <= trace::kQuietSlots, "raise trace::kQuietSlots");
static_assert(apis_with(trace::kApiCounted | trace::kApiQuiet) ==
                  apis_with(trace::kApiCounted) + apis_with(trace::kApiQuiet),
              "an API is either counted or quiet");

constexpr int field_count(const char* fields) {
  if (fields == nullptr || *fields == 0) return 0;
  int n = 1;
  for (const char* p = fields; *p; ++p) n += (*p == ',') ? 1 : 0;
  return n;
}

}  // namespace cuprobe
