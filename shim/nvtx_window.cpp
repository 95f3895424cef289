// Capture window opened by an NVTX range (CUPROBE_WINDOW_NVTX=NAME, `cuprobe record --window-nvtx
// NAME`; docs/flight-recorder.md): routine calls are written only while a range of that name is
// open in the process (pushed and not yet popped on any thread, or started and not yet ended).
//
// The shim is the job's NVTX tool: NVTX v3 (header-only in the application: PyTorch's
// torch.cuda.nvtx, cudnn-frontend, a C++ program) loads the library named by NVTX_INJECTION64_PATH
// at the first NVTX call and calls its InitializeInjectionNvtx2, which fills the core module's
// function table with our range functions. The shim sets NVTX_INJECTION64_PATH to itself at load
// when the window is asked for and no other NVTX tool is named there. Only range calls are taken;
// marks and names stay no-ops, as without a tool.
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nvtx3/nvToolsExt.h>

#include "env_config.h"
#include "recorder.h"
#include "recorder_internal.h"

namespace cuprobe::shim {

bool g_window_nvtx = false;
uint32_t g_nvtx_open = 0;  // ranges of the name open now, all threads together

namespace {

char g_name[256];
size_t g_name_len = 0;

// Per thread, which pushed ranges (innermost in bit 0) are ours, up to 64 levels deep.
__thread uint64_t t_push_bits __attribute__((tls_model("initial-exec")));
__thread uint32_t t_push_depth __attribute__((tls_model("initial-exec")));
uint64_t g_next_range = 0;

bool is_ours(const char* message) {
  return message != nullptr && strncmp(message, g_name, g_name_len + 1) == 0;
}

bool is_ours(const nvtxEventAttributes_t* a) {
  return a != nullptr && a->messageType == NVTX_MESSAGE_TYPE_ASCII && is_ours(a->message.ascii);
}

void opened() {
  __atomic_add_fetch(&g_nvtx_open, 1u, __ATOMIC_RELEASE);
  if (trace::FileHeader* h = trace_header()) __atomic_add_fetch(&h->ring.window_marker_opens, 1ull, __ATOMIC_RELAXED);
}

void closed() {
  uint32_t n = __atomic_load_n(&g_nvtx_open, __ATOMIC_RELAXED);
  while (n > 0 && !__atomic_compare_exchange_n(&g_nvtx_open, &n, n - 1, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
  }
}

int push(bool ours) {
  if (t_push_depth < 64) t_push_bits = (t_push_bits << 1) | (ours ? 1u : 0u);
  ++t_push_depth;
  if (ours) opened();
  return int(t_push_depth) - 1;  // the level the range was pushed at, as NVTX returns it
}

int NVTX_API range_push_a(const char* message) { return push(is_ours(message)); }
int NVTX_API range_push_ex(const nvtxEventAttributes_t* a) { return push(is_ours(a)); }
int NVTX_API range_pop() {
  if (t_push_depth == 0) return -1;
  --t_push_depth;
  if (t_push_depth < 64) {
    if (t_push_bits & 1u) closed();
    t_push_bits >>= 1;
  }
  return int(t_push_depth);
}

// Start/end ranges may end on another thread: the id carries whether it was ours.
nvtxRangeId_t start(bool ours) {
  if (ours) opened();
  return (__atomic_add_fetch(&g_next_range, 1ull, __ATOMIC_RELAXED) << 1) | (ours ? 1u : 0u);
}
nvtxRangeId_t NVTX_API range_start_a(const char* message) { return start(is_ours(message)); }
nvtxRangeId_t NVTX_API range_start_ex(const nvtxEventAttributes_t* a) { return start(is_ours(a)); }
void NVTX_API range_end(nvtxRangeId_t id) {
  if (id & 1u) closed();
}

}  // namespace

// Read at configuration (recorder_lifecycle.cpp). Names the shim as the NVTX tool unless another
// one is named already: then the window cannot be seen, and is not used.
void nvtx_window_configure() {
  const char* name = env_value(env::Id::kWindowNvtx);
  if (name == nullptr) return;
  g_name_len = strnlen(name, sizeof g_name - 1);
  memcpy(g_name, name, g_name_len);
  g_name[g_name_len] = 0;
  Dl_info self{};
  const char* other = getenv("NVTX_INJECTION64_PATH");
  if (dladdr(reinterpret_cast<void*>(&nvtx_window_configure), &self) == 0 || self.dli_fname == nullptr) return;
  if (other != nullptr && *other != 0 && strcmp(other, self.dli_fname) != 0) {
    if (!g_config.quiet) {
      char buf[1024];
      int n = snprintf(buf, sizeof buf,
                       "cuprobe: CUPROBE_WINDOW_NVTX=%s needs the shim as the NVTX tool, but NVTX_INJECTION64_PATH "
                       "names %s; recording every routine call instead\n",
                       g_name, other);
      if (n > 0) (void)!write(STDERR_FILENO, buf, size_t(n) < sizeof buf ? size_t(n) : sizeof buf - 1);
    }
    env_not_taken(env::Id::kWindowNvtx);  // the programs it runs would meet the same tool
    return;
  }
  setenv("NVTX_INJECTION64_PATH", self.dli_fname, 1);
  g_window_nvtx = true;
}

const char* nvtx_window_name() { return g_window_nvtx ? g_name : nullptr; }

}  // namespace cuprobe::shim

// NVTX v3's loader calls this once, at the application's first NVTX call.
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table) {
  using namespace cuprobe::shim;
  if (!g_window_nvtx || get_table == nullptr) return 0;
  auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->GetModuleFunctionTable == nullptr) return 0;
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) || table == nullptr) return 0;
  auto set = [&](unsigned id, auto fn) {
    if (id < size && table[id] != nullptr) *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
  };
  set(NVTX_CBID_CORE_RangePushA, &range_push_a);
  set(NVTX_CBID_CORE_RangePushEx, &range_push_ex);
  set(NVTX_CBID_CORE_RangePop, &range_pop);
  set(NVTX_CBID_CORE_RangeStartA, &range_start_a);
  set(NVTX_CBID_CORE_RangeStartEx, &range_start_ex);
  set(NVTX_CBID_CORE_RangeEnd, &range_end);
  return 1;
}
