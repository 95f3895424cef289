// Test double of PyTorch's libc10.so, as far as the shim hooks it: the caching allocator's
// out-of-memory report, c10::reportOutOfMemoryToProfiler (c10/core/Allocator.h), declared here
// the way PyTorch declares it so that the mangled name is the one the shim exports. It counts
// the reports that reach it (fakec10_reports), so tests can tell the shim passed them on.
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace c10 {

// c10/core/Device.h: a device type (1 is CUDA) and an index, two bytes passed by value.
struct Device {
  int8_t type;
  int8_t index;
};

__attribute__((visibility("default"))) void reportOutOfMemoryToProfiler(int64_t alloc_size, size_t total_allocated,
                                                                        size_t total_reserved, Device device);

}  // namespace c10

namespace {
std::atomic<int> g_reports{0};
}  // namespace

void c10::reportOutOfMemoryToProfiler(int64_t, size_t, size_t, Device) { g_reports.fetch_add(1); }

extern "C" __attribute__((visibility("default"))) int fakec10_reports() { return g_reports.load(); }
