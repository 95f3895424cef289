// The process record, the API table and device descriptions; see process_info.h.
#include "process_info.h"

#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver_queries.h"
#include "faults.h"
#include "fork.h"
#include "plan_pins.h"
#include "resolve.h"
#include "search_budget.h"

namespace cuprobe::shim {

const char* g_api_fields[kApiCount];

namespace {

uint32_t g_described_devices;  // bit per device index < 32
uint32_t g_describe_failures;  // descriptions the driver did not answer; retried up to kDescribeRetries
uint32_t g_runtime_written;
uint32_t g_driver_written;
int g_runtime_version;  // 0 not asked yet, -1 the runtime did not say
uint32_t g_cudnn_written;
uint32_t g_torch_version_written;   // 1 once written (or known not to be found: no version.py)
uint32_t g_torch_version_attempts;  // walks of the loaded objects for libc10 so far
uint32_t g_nccl_version_written;
uint32_t g_cublaslt_written;
uint32_t g_nvidia_driver_written;
int g_nccl_nranks;  // size of the largest NCCL communicator written, 0 none; under the meta lock

int env_int(const char* const* names) {
  for (; *names; ++names) {
    const char* v = getenv(*names);
    if (v != nullptr && *v != 0) {
      char* end = nullptr;
      long n = strtol(v, &end, 10);
      if (end != nullptr && *end == 0) return int(n);
    }
  }
  return -1;
}

size_t read_file(const char* path, char* buf, size_t cap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  size_t n = 0;
  while (n < cap) {
    ssize_t r = read(fd, buf + n, cap - n);
    if (r <= 0) break;
    n += size_t(r);
  }
  close(fd);
  return n;
}

const char* const kRank[] = {"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", nullptr};
const char* const kWorld[] = {"WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", nullptr};
int g_nccl_rank = -1;  // this process's rank in the largest NCCL communicator so far

void write_process_info() {
  static const char* const kLocalRank[] = {"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", nullptr};
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  static char cmdline[16384];
  size_t cmd_len = read_file("/proc/self/cmdline", cmdline, sizeof cmdline);
  char exe[4096];
  ssize_t exe_len = readlink("/proc/self/exe", exe, sizeof exe);
  if (exe_len < 0) exe_len = 0;
  char cwd[4096];
  size_t cwd_len = getcwd(cwd, sizeof cwd) ? strlen(cwd) : 0;
  size_t host_len = strlen(host);
  uint32_t size = trace::align8(uint32_t(sizeof(trace::ProcessInfo) + host_len + cmd_len + size_t(exe_len) + cwd_len));
  MetaWriter w;
  char* p = w.reserve(size);
  if (p == nullptr) return;
  auto* r = reinterpret_cast<trace::ProcessInfo*>(p);
  r->h = trace::make_header(trace::RecordType::kProcessInfo, size);
  r->pid = uint32_t(getpid());
  r->ppid = uint32_t(getppid());
  r->rank = env_int(kRank);
  r->local_rank = env_int(kLocalRank);
  r->world_size = env_int(kWorld);
  r->uid = uint32_t(getuid());
  r->hostname_len = uint32_t(host_len);
  r->cmdline_len = uint32_t(cmd_len);
  r->exe_len = uint32_t(exe_len);
  r->cwd_len = uint32_t(cwd_len);
  char* text = r->text;
  memcpy(text, host, host_len);
  memcpy(text += host_len, cmdline, cmd_len);
  memcpy(text += cmd_len, exe, size_t(exe_len));
  memcpy(text += exe_len, cwd, cwd_len);
  w.commit(size);
}

void write_api_table() {
  register_cudart_fields();
  register_cudnn_fields();
  register_driver_fields();
  register_nccl_fields();
  register_cublaslt_fields();
  MetaWriter w;
  for (int id = 0; id < kApiCount; ++id) {
    const ApiStatic& a = kApis[id];
    const char* fields = g_api_fields[id] ? g_api_fields[id] : "";
    size_t name_len = strlen(a.name);
    size_t fields_len = strlen(fields);
    uint32_t size = trace::align8(uint32_t(sizeof(trace::ApiInfo) + name_len + fields_len));
    char* p = w.reserve(size);
    if (p == nullptr) return;
    auto* r = reinterpret_cast<trace::ApiInfo*>(p);
    r->h = trace::make_header(trace::RecordType::kApiInfo, size, uint16_t(id));
    r->library = uint16_t(a.library);
    r->name_len = uint16_t(name_len);
    r->flags = a.flags;
    r->fields_len = uint32_t(fields_len);
    r->count_slot = count_slot(ApiId(id));
    r->pad = 0;
    memcpy(r->text, a.name, name_len);
    memcpy(r->text + name_len, fields, fields_len);
    w.commit(size);
  }
}

// The variables of trace::kRecordedEnv (names and prefixes), one property record each.
bool recorded_env_name(const char* entry, size_t name_len) {
  for (const char* n : trace::kRecordedEnv) {
    if (strlen(n) == name_len && memcmp(n, entry, name_len) == 0) return true;
  }
  for (const char* prefix : trace::kRecordedEnvPrefixes) {
    size_t k = strlen(prefix);
    if (name_len > k && memcmp(prefix, entry, k) == 0) return true;
  }
  return false;
}

void write_environment() {
  uint32_t written = 0;
  for (char** e = environ; e != nullptr && *e != nullptr && written < trace::kMaxEnvRecords; ++e) {
    const char* eq = strchr(*e, '=');
    if (eq == nullptr || eq == *e || !recorded_env_name(*e, size_t(eq - *e))) continue;
    char text[256 + trace::kMaxEnvValue + 1];
    size_t name_len = size_t(eq - *e) + 1;  // with the '='
    if (name_len > 256) continue;
    size_t value_len = strnlen(eq + 1, trace::kMaxEnvValue);
    memcpy(text, *e, name_len);
    memcpy(text + name_len, eq + 1, value_len);
    text[name_len + value_len] = 0;
    if (uint32_t id = intern_string(text)) {
      write_property(trace::Property::kEnvironment, id);
      ++written;
    }
  }
}

}  // namespace

void write_process_records() {
  write_process_info();
  write_environment();
  write_api_table();
  write_property(trace::Property::kLaunchEvents, g_launch_events ? 1 : 0);
  write_fault_records();
  write_pin_property();
  write_budget_property();
}

int process_rank() { return env_int(kRank); }

void job_rank(int* rank, int* world_size) {
  *rank = env_int(kRank);
  *world_size = env_int(kWorld);
  if (*rank < 0) *rank = __atomic_load_n(&g_nccl_rank, __ATOMIC_ACQUIRE);
  if (*world_size <= 0) *world_size = __atomic_load_n(&g_nccl_nranks, __ATOMIC_ACQUIRE);
}

namespace {

// The child's file has none of these records yet.
void process_info_after_fork() {
  g_described_devices = 0;
  g_describe_failures = 0;
  g_runtime_written = 0;
  g_driver_written = 0;
  g_cudnn_written = 0;
  g_torch_version_written = 0;
  g_torch_version_attempts = 0;
  g_nccl_version_written = 0;
  g_cublaslt_written = 0;
  g_nvidia_driver_written = 0;
  g_nccl_nranks = 0;
  g_nccl_rank = -1;
}
CUPROBE_FORK_CHILD_RESET(process_info_after_fork);

}  // namespace

namespace {

// A kLibraryVersion record "NAME=VERSION"; VERSION only of the characters versions are made of
// (what a file says is not trusted further).
void write_library_version(const char* name, const char* version, size_t len) {
  if (len == 0 || len > 64) return;
  for (size_t i = 0; i < len; ++i) {
    char c = version[i];
    bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' || c == '+' ||
              c == '-' || c == '_';
    if (!ok) return;
  }
  char text[96];
  int n = snprintf(text, sizeof text, "%s=%.*s", name, int(len), version);
  if (n <= 0 || size_t(n) >= sizeof text) return;
  if (uint32_t id = intern_string(text)) write_property(trace::Property::kLibraryVersion, id);
}

int find_c10(struct dl_phdr_info* info, size_t, void* out) {
  const char* name = info->dlpi_name;
  if (name == nullptr || *name == 0) return 0;
  const char* base = strrchr(name, '/');
  if (base == nullptr || strncmp(base + 1, "libc10.so", 9) != 0) return 0;
  size_t len = strnlen(name, PATH_MAX);
  if (len >= PATH_MAX) return 0;
  memcpy(out, name, len + 1);
  return 1;
}

// PyTorch's version, from torch/version.py beside torch/lib/libc10.so (pip wheels, conda and
// source builds all lay it out so): `__version__ = '2.11.0+cu130'`.
void note_torch_version() {
  constexpr uint32_t kAttempts = 4;  // libc10 not mapped yet: asked again on a few later notes
  if (__atomic_load_n(&g_torch_version_written, __ATOMIC_RELAXED)) return;
  if (__atomic_fetch_add(&g_torch_version_attempts, 1u, __ATOMIC_RELAXED) >= kAttempts) return;
  char path[PATH_MAX + 16];
  path[0] = 0;
  if (!dl_iterate_phdr(find_c10, path)) return;
  if (__atomic_exchange_n(&g_torch_version_written, 1u, __ATOMIC_ACQ_REL)) return;
  char* slash = strrchr(path, '/');  // .../torch/lib/libc10.so
  if (slash == nullptr) return;
  *slash = 0;
  slash = strrchr(path, '/');  // .../torch/lib
  if (slash == nullptr || strcmp(slash, "/lib") != 0) return;
  strcpy(slash, "/version.py");
  char buf[4096];
  size_t n = read_file(path, buf, sizeof buf - 1);
  buf[n] = 0;
  for (char* line = buf; line != nullptr && *line != 0;) {
    char* next = strchr(line, '\n');
    if (next != nullptr) *next++ = 0;
    if (strncmp(line, "__version__", 11) == 0) {
      char* q = strpbrk(line, "'\"");
      if (q != nullptr) {
        char* end = strchr(q + 1, *q);
        if (end != nullptr) write_library_version("torch", q + 1, size_t(end - q - 1));
      }
      return;
    }
    line = next;
  }
}

// The NVIDIA kernel module's release (what nvidia-smi calls the driver version): the first
// token of /proc/driver/nvidia/version's first line after "Kernel Module" that starts with a digit.
void note_nvidia_driver() {
  if (__atomic_exchange_n(&g_nvidia_driver_written, 1u, __ATOMIC_ACQ_REL)) return;
  char buf[512];
  size_t n = read_file("/proc/driver/nvidia/version", buf, sizeof buf - 1);
  buf[n] = 0;
  if (char* nl = strchr(buf, '\n')) *nl = 0;
  const char* p = strstr(buf, "Kernel Module");
  if (p == nullptr) return;
  for (p += 13; *p != 0;) {
    while (*p == ' ' || *p == '\t') ++p;
    size_t len = strcspn(p, " \t");
    if (len > 0 && *p >= '0' && *p <= '9') {
      write_library_version("nvidia_driver", p, len);
      return;
    }
    p += len;
  }
}

void write_nccl_comm(int nranks, int rank);

}  // namespace

void note_nccl_comm(int nranks, int rank) {
  if (nranks <= 0 || rank < 0 || rank >= nranks) return;
  if (!__atomic_exchange_n(&g_nccl_version_written, 1u, __ATOMIC_ACQ_REL)) {
    // NCCL_VERSION_CODE: major*10000 + minor*100 + patch since 2.9, major*1000 + minor*100 + patch before.
    using VersionFn = int (*)(int*);
    int code = 0;
    auto fn = reinterpret_cast<VersionFn>(resolve_in_library(trace::Library::kNccl, "ncclGetVersion"));
    if (fn != nullptr && fn(&code) == 0 && code > 0) {
      int major = code >= 10000 ? code / 10000 : code / 1000;
      int minor = code >= 10000 ? code % 10000 / 100 : code % 1000 / 100;
      char v[32];
      int n = snprintf(v, sizeof v, "%d.%d.%d", major, minor, code % 100);
      if (n > 0 && size_t(n) < sizeof v) write_library_version("nccl", v, size_t(n));
    }
    note_torch_version();
  }
  if (nranks <= __atomic_load_n(&g_nccl_nranks, __ATOMIC_RELAXED)) return;
  write_nccl_comm(nranks, rank);
  faults_rank_known();  // rules aimed at a rank (rank=N, rank=random) where no launcher said it
}

void note_cublaslt_library() {
  if (__atomic_exchange_n(&g_cublaslt_written, 1u, __ATOMIC_ACQ_REL)) return;
  using VersionFn = size_t (*)();
  auto fn = reinterpret_cast<VersionFn>(resolve_in_library(trace::Library::kCublasLt, "cublasLtGetVersion"));
  size_t code = fn != nullptr ? fn() : 0;  // major*10000 + minor*100 + patch
  if (code == 0) return;
  char v[32];
  int n = snprintf(v, sizeof v, "%zu.%zu.%zu", code / 10000, code % 10000 / 100, code % 100);
  if (n > 0 && size_t(n) < sizeof v) write_library_version("cublaslt", v, size_t(n));
}

namespace {

void write_nccl_comm(int nranks, int rank) {
  // Both records under one hold of the writer, so that two communicators set up at once by two
  // threads leave the larger one's pair last.
  MetaWriter w;
  if (nranks <= g_nccl_nranks) return;
  __atomic_store_n(&g_nccl_rank, rank, __ATOMIC_RELEASE);
  __atomic_store_n(&g_nccl_nranks, nranks, __ATOMIC_RELEASE);
  constexpr uint32_t kSize = sizeof(trace::PropertyRecord);
  const trace::Property keys[] = {trace::Property::kNcclRank, trace::Property::kNcclWorldSize};
  const int64_t values[] = {rank, nranks};
  for (int i = 0; i < 2; ++i) {
    char* p = w.reserve(kSize);
    if (p == nullptr) return;
    auto* r = reinterpret_cast<trace::PropertyRecord*>(p);
    r->h = trace::make_header(trace::RecordType::kProperty, kSize);
    r->key = uint32_t(keys[i]);
    r->pad = 0;
    r->value = values[i];
    w.commit(kSize);
  }
}

}  // namespace

void note_cudnn_library() {
  if (__atomic_load_n(&g_cudnn_written, __ATOMIC_RELAXED)) return;
  if (__atomic_exchange_n(&g_cudnn_written, 1u, __ATOMIC_ACQ_REL)) return;
  note_torch_version();
  using VersionFn = size_t (*)();
  if (auto fn = reinterpret_cast<VersionFn>(resolve_in_library(trace::Library::kCudnn, "cudnnGetVersion"))) {
    write_property(trace::Property::kCudnnVersion, int64_t(fn()));
  }
  if (auto fn = reinterpret_cast<VersionFn>(resolve_in_library(trace::Library::kCudnn, "cudnnGetCudartVersion"))) {
    write_property(trace::Property::kCudnnCudartVersion, int64_t(fn()));
  }
}

int cuda_runtime_version() {
  int v = __atomic_load_n(&g_runtime_version, __ATOMIC_ACQUIRE);
  if (v != 0) return v > 0 ? v : 0;
  using VersionFn = cudaError_t (*)(int*);
  auto fn = reinterpret_cast<VersionFn>(real_function(ApiId::cudaRuntimeGetVersion));
  int asked = 0;
  v = fn != nullptr && fn(&asked) == cudaSuccess && asked > 0 ? asked : -1;
  __atomic_store_n(&g_runtime_version, v, __ATOMIC_RELEASE);
  return v > 0 ? v : 0;
}

void note_runtime() {
  if (__atomic_load_n(&g_runtime_written, __ATOMIC_RELAXED)) return;
  if (__atomic_exchange_n(&g_runtime_written, 1u, __ATOMIC_ACQ_REL)) return;
  if (int v = cuda_runtime_version(); v > 0) write_property(trace::Property::kCudaRuntimeVersion, v);
}

void note_device(int device) {
  // A driver that did not answer (not loaded yet, not initialised) is asked again on a few later
  // calls, not on every one: each attempt walks the loaded objects.
  constexpr uint32_t kDescribeRetries = 8;
  if (device < 0 || device >= 32) return;
  uint32_t bit = 1u << device;
  if (__atomic_load_n(&g_described_devices, __ATOMIC_RELAXED) & bit) return;
  if (__atomic_fetch_or(&g_described_devices, bit, __ATOMIC_ACQ_REL) & bit) return;
  if (!__atomic_load_n(&g_driver_written, __ATOMIC_ACQUIRE)) {
    if (int v = driver_version(); v > 0 && !__atomic_exchange_n(&g_driver_written, 1u, __ATOMIC_ACQ_REL)) {
      write_property(trace::Property::kCudaDriverVersion, v);
      note_nvidia_driver();
    }
  }
  note_torch_version();
  trace::DeviceInfo info;
  if (!describe_device(device, &info)) {
    if (__atomic_fetch_add(&g_describe_failures, 1u, __ATOMIC_RELAXED) < kDescribeRetries) {
      __atomic_fetch_and(&g_described_devices, ~bit, __ATOMIC_ACQ_REL);
    }
    return;
  }
  MetaWriter w;
  constexpr uint32_t kSize = sizeof(trace::DeviceInfo);
  char* p = w.reserve(kSize);
  if (p == nullptr) return;
  info.h = trace::make_header(trace::RecordType::kDeviceInfo, kSize);
  memcpy(p, &info, kSize);
  w.commit(kSize);
}

int current_device(ThreadState& t) {
  if (t.device >= 0 || t.device_probed) return t.device;
  t.device_probed = 1;
  using GetDeviceFn = cudaError_t (*)(int*);
  auto fn = reinterpret_cast<GetDeviceFn>(real_function(ApiId::cudaGetDevice));
  int d = -1;
  if (fn != nullptr && fn(&d) == cudaSuccess) {
    t.device = d;
    retarget_counts(t);
  }
  return t.device;
}

}  // namespace cuprobe::shim
