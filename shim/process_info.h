// What the trace says about the process as a whole: the process record and API table written
// when the file is created, device descriptions and library versions written the first time
// they are known. Queries go to the real libraries through their slots, and only after the
// application itself has initialised CUDA (the caller guarantees that). Device descriptions come
// from the driver, never from a runtime structure whose layout depends on the runtime's version.
#pragma once

#include "api.h"
#include "recorder.h"

namespace cuprobe::shim {

void write_process_records();  // once, right after the file is created

// Writes a DeviceInfo record (and the driver's version) the first time `device` is seen after a
// successful call that implies its context exists, from the driver's own queries
// (driver_queries.h): safe from runtime and driver wrappers alike, after their real call.
void note_device(int device);

// Writes the CUDA runtime's version once; from runtime wrappers only.
void note_runtime();

// The loaded CUDA runtime's version (cudaRuntimeGetVersion of the real runtime: 12080, 13000),
// asked once; 0 when there is no runtime or it did not say. Which ABI a version-dependent
// runtime function has is decided by this (docs/shim.md, "CUDA 12 and 13"). From runtime
// wrappers only: a runtime call from inside a driver wrapper can wait on the runtime's lock.
int cuda_runtime_version();

// Writes cuDNN's version and the CUDA runtime version it was built for, once per process,
// from the copy of libcudnn the calls go to.
void note_cudnn_library();

// Current device of the calling thread as far as the CUDA runtime knows it, asking the real
// cudaGetDevice at most once per thread until the application sets a device itself.
int current_device(ThreadState& t);

// Records an NCCL communicator the process set up: its size and the process's rank in it become
// the process properties kNcclRank and kNcclWorldSize when it is larger than every one before
// (the world's communicator, not a subgroup's or a point-to-point pair's).
void note_nccl_comm(int nranks, int rank);

// Writes cuBLASLt's version (a kLibraryVersion "cublaslt=13.1.0") once per process, from the copy
// of libcublasLt the calls go to (cublasLtGetVersion).
void note_cublaslt_library();

int process_rank();  // from RANK, SLURM_PROCID, OMPI_COMM_WORLD_RANK or PMI_RANK; -1 when none
// The job's rank of this process and its size as cuprobe knows them: the launcher's variables,
// else the largest NCCL communicator's (torch.multiprocessing.spawn sets none); -1 each unknown.
void job_rank(int* rank, int* world_size);

}  // namespace cuprobe::shim

namespace cuprobe::shim {
// Argument fields of every API (trace_format.h encoding), filled by each library's wrapper file.
extern const char* g_api_fields[kApiCount];
void register_cudart_fields();
void register_cudnn_fields();
void register_driver_fields();
void register_nccl_fields();
void register_cublaslt_fields();
}  // namespace cuprobe::shim
