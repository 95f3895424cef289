// Imitates PyTorch's CUDA caching allocator with expandable segments running out of memory
// (c10/cuda/CUDACachingAllocator.cpp, PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True): one
// large reserved range grows by 20 MiB pages, each a cuMemCreate; a request creates all its pages
// first, then maps them and sets their access. A few requests succeed; then `expandable_oom REQ`
// asks for REQ bytes, more than the device has (FAKECUDA_MEM): pages are created until
// cuMemCreate fails, the created ones released, the request retried once the same way (after
// "freeing the cache"), then the allocator asks cudaMemGetInfo for its message, reports the
// failure (c10::reportOutOfMemoryToProfiler(REQ, allocated, reserved, cuda:0)) and the process
// dies of torch.OutOfMemoryError: exit 1.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace c10 {
struct Device {  // c10/core/Device.h
  int8_t type;
  int8_t index;
};
void reportOutOfMemoryToProfiler(int64_t alloc_size, size_t total_allocated, size_t total_reserved, Device device);
}  // namespace c10

extern "C" int fakec10_reports();

namespace {

constexpr size_t kMiB = 1u << 20;
constexpr size_t kPage = 20 * kMiB;       // the large pool's segment page
constexpr size_t kReserve = 64ull << 30;  // the segment's virtual range

struct Segment {
  CUdeviceptr base = 0;
  size_t mapped = 0;
  std::vector<CUmemGenericAllocationHandle> pages;
};

CUmemAllocationProp device0() {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  return prop;
}

// Grows the segment by enough pages for `bytes`; on a failed cuMemCreate releases the pages it
// created and returns that error.
CUresult grow(Segment& seg, size_t bytes) {
  CUmemAllocationProp prop = device0();
  std::vector<CUmemGenericAllocationHandle> created;
  for (size_t n = (bytes + kPage - 1) / kPage; created.size() < n;) {
    CUmemGenericAllocationHandle h = 0;
    CUresult r = cuMemCreate(&h, kPage, &prop, 0);
    if (r != CUDA_SUCCESS) {
      for (auto c : created) cuMemRelease(c);
      return r;
    }
    created.push_back(h);
  }
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  for (auto h : created) {
    CUdeviceptr at = seg.base + seg.mapped;
    if (cuMemMap(at, kPage, 0, h, 0) != CUDA_SUCCESS || cuMemSetAccess(at, kPage, &access, 1) != CUDA_SUCCESS) {
      std::fprintf(stderr, "expandable_oom: mapping failed\n");
      std::exit(3);
    }
    seg.mapped += kPage;
    seg.pages.push_back(h);
  }
  return CUDA_SUCCESS;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: expandable_oom REQUEST_BYTES\n");
    return 2;
  }
  const size_t request = std::strtoull(argv[1], nullptr, 10);
  cudaSetDevice(0);
  Segment seg;
  if (cuMemAddressReserve(&seg.base, kReserve, 0, 0, 0) != CUDA_SUCCESS) return 3;
  size_t allocated = 0;
  for (size_t bytes : {20 * kMiB, 50 * kMiB, 100 * kMiB}) {
    if (grow(seg, bytes) != CUDA_SUCCESS) return 3;
    allocated += bytes;
  }
  std::printf("allocated %zu reserved %zu\n", allocated, seg.mapped);

  CUresult r = grow(seg, request);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) r = grow(seg, request);  // after freeing the cache, once more
  if (r == CUDA_SUCCESS) {
    std::printf("request fitted\n");
    return 0;
  }
  size_t free_bytes = 0, total = 0;
  cudaMemGetInfo(&free_bytes, &total);
  c10::reportOutOfMemoryToProfiler(int64_t(request), allocated, seg.mapped, c10::Device{1, 0});
  std::printf("reports %d\n", fakec10_reports());
  std::printf(
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate %zu bytes. GPU 0 has a total capacity "
      "of %zu bytes of which %zu bytes is free.\n",
      request, total, free_bytes);
  return 1;
}
