// The one list of NCCL functions cuprobe intercepts: the ways a process creates a communicator,
// each of which names the process's rank in it and the communicator's size. They are rare (a
// handful per process) and tell who a process is when its launcher set no RANK variable
// (torch.multiprocessing.spawn, issue 13).
//
// Same entry format as cudart_hooks.h; parameter lists are NCCL 2.28's nccl.h, checked at compile
// time where nccl.h is installed (shim/nccl_abi.h declares the few types otherwise).
// PyTorch's ProcessGroupNCCL makes these calls from libtorch_cuda.so, which has libnccl.so.2
// (the nvidia-nccl wheel) as a NEEDED entry, so the preloaded shim's exports are bound first.
// ncclCommInitRankScalable: NCCL 2.23; ncclCommSplit: NCCL 2.18. A library without one of them
// is simply never asked for it. Fault rules may replace each (ncclCommInitRank:ncclSystemError,
// issue 32): the set-up fails as NCCL's would, nothing is created.
// Include nccl_abi.h before expanding the parameter lists.
#pragma once

#define CUPROBE_NCCL_HOOKS(X)                                                                                         \
  X(ncclResult_t, ncclCommInitRank, ncclCommInitRank, (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank), \
    (comm, nranks, commId, rank), CommInit | Faultable)                                                               \
  X(ncclResult_t, ncclCommInitRankConfig, ncclCommInitRankConfig,                                                     \
    (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config),                             \
    (comm, nranks, commId, rank, config), CommInit | Faultable)                                                       \
  X(ncclResult_t, ncclCommInitRankScalable, ncclCommInitRankScalable,                                                 \
    (ncclComm_t * newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds, ncclConfig_t* config),             \
    (newcomm, nranks, myrank, nId, commIds, config), CommInit | Faultable)                                            \
  X(ncclResult_t, ncclCommSplit, ncclCommSplit,                                                                       \
    (ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config),                                 \
    (comm, color, key, newcomm, config), CommInit | Faultable)
