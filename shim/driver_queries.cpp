// Device descriptions and the driver version from the driver's own queries; see driver_queries.h.
#include "driver_queries.h"

#include <cuda.h>
#include <string.h>

#include "resolve.h"

namespace cuprobe::shim {

namespace {

// The driver function `name` (or, when absent, `fallback`), found once it is there.
template <typename Fn>
Fn driver_fn(void** slot, const char* name, const char* fallback = nullptr) {
  void* p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (p == nullptr) {
    p = resolve_in_library(trace::Library::kDriver, name);
    if (p == nullptr && fallback != nullptr) p = resolve_in_library(trace::Library::kDriver, fallback);
    if (p == nullptr) return nullptr;
    __atomic_store_n(slot, p, __ATOMIC_RELEASE);
  }
  return reinterpret_cast<Fn>(p);
}

void* g_device_get;
void* g_get_name;
void* g_total_mem;
void* g_get_uuid;
void* g_get_attribute;
void* g_driver_version;

using DeviceGetFn = CUresult (*)(CUdevice*, int);
using GetNameFn = CUresult (*)(char*, int, CUdevice);
using TotalMemFn = CUresult (*)(size_t*, CUdevice);
using GetUuidFn = CUresult (*)(CUuuid*, CUdevice);
using GetAttributeFn = CUresult (*)(int*, CUdevice_attribute, CUdevice);
using DriverVersionFn = CUresult (*)(int*);

int attribute(GetAttributeFn fn, CUdevice_attribute a, CUdevice dev) {
  int v = -1;
  if (fn == nullptr || fn(&v, a, dev) != CUDA_SUCCESS) return -1;
  return v;
}

}  // namespace

bool device_name(int ordinal, char* out, int cap) {
  if (cap <= 0) return false;
  memset(out, 0, size_t(cap));
  auto device_get = driver_fn<DeviceGetFn>(&g_device_get, "cuDeviceGet");
  auto get_name = driver_fn<GetNameFn>(&g_get_name, "cuDeviceGetName");
  CUdevice dev = 0;
  if (device_get == nullptr || get_name == nullptr || device_get(&dev, ordinal) != CUDA_SUCCESS) return false;
  if (get_name(out, cap - 1, dev) != CUDA_SUCCESS) {
    memset(out, 0, size_t(cap));
    return false;
  }
  return out[0] != 0;
}

bool describe_device(int ordinal, trace::DeviceInfo* out) {
  out->index = ordinal;
  out->cc_major = out->cc_minor = out->multiprocessors = -1;
  out->pci_domain = out->pci_bus = out->pci_device = -1;
  out->total_mem = 0;
  out->pad = 0;
  memset(out->uuid, 0, sizeof out->uuid);
  memset(out->name, 0, sizeof out->name);

  auto device_get = driver_fn<DeviceGetFn>(&g_device_get, "cuDeviceGet");
  CUdevice dev = 0;
  if (device_get == nullptr || device_get(&dev, ordinal) != CUDA_SUCCESS) return false;

  // The name is NUL-terminated by the driver when it fits; the last byte stays 0 regardless.
  if (auto fn = driver_fn<GetNameFn>(&g_get_name, "cuDeviceGetName")) {
    if (fn(out->name, int(sizeof out->name) - 1, dev) != CUDA_SUCCESS) memset(out->name, 0, sizeof out->name);
  }
  // cuDeviceTotalMem (v1) took an unsigned int and is wrong above 4 GiB: only _v2.
  if (auto fn = driver_fn<TotalMemFn>(&g_total_mem, "cuDeviceTotalMem_v2")) {
    size_t bytes = 0;
    if (fn(&bytes, dev) == CUDA_SUCCESS) out->total_mem = bytes;
  }
  // _v2 (CUDA 11.4) names a MIG instance by its own UUID, as cudaDeviceProp::uuid does; the plain
  // function, kept for old drivers, names the whole GPU.
  if (auto fn = driver_fn<GetUuidFn>(&g_get_uuid, "cuDeviceGetUuid_v2", "cuDeviceGetUuid")) {
    CUuuid u;
    if (fn(&u, dev) == CUDA_SUCCESS) memcpy(out->uuid, u.bytes, sizeof out->uuid);
  }
  auto get_attribute = driver_fn<GetAttributeFn>(&g_get_attribute, "cuDeviceGetAttribute");
  out->cc_major = attribute(get_attribute, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  out->cc_minor = attribute(get_attribute, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  out->multiprocessors = attribute(get_attribute, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
  out->pci_domain = attribute(get_attribute, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, dev);
  out->pci_bus = attribute(get_attribute, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev);
  out->pci_device = attribute(get_attribute, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, dev);
  return true;
}

int driver_version() {
  int v = 0;
  auto fn = driver_fn<DriverVersionFn>(&g_driver_version, "cuDriverGetVersion");
  if (fn == nullptr || fn(&v) != CUDA_SUCCESS) return 0;
  return v;
}

}  // namespace cuprobe::shim
