// The one list of NCCL functions cuprobe intercepts: the ways a process creates a communicator,
// each of which names the process's rank in it and the communicator's size. They are rare (a
// handful per process) and tell who a process is when its launcher set no RANK variable
// (torch.multiprocessing.spawn, issue 13). And the collectives and point-to-point calls, which
// fault rules may fail or delay (issue 32: a rank whose allreduce hangs, for watchdog tests);
// each is one record (DDP makes a few per step: its gradient buckets). And the two ways a
// communicator ends: ncclCommDestroy (a clean shutdown) and ncclCommAbort (what PyTorch's NCCL
// watchdog calls when a collective timed out or failed, before it tears the process down), which
// tell a chaos test how a rank ended; recorded only, never faulted.
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

#define CUPROBE_NCCL_HOOKS(X)                                                                                          \
  X(ncclResult_t, ncclCommInitRank, ncclCommInitRank, (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank),  \
    (comm, nranks, commId, rank), CommInit | Faultable)                                                                \
  X(ncclResult_t, ncclCommInitRankConfig, ncclCommInitRankConfig,                                                      \
    (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config),                              \
    (comm, nranks, commId, rank, config), CommInit | Faultable)                                                        \
  X(ncclResult_t, ncclCommInitRankScalable, ncclCommInitRankScalable,                                                  \
    (ncclComm_t * newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds, ncclConfig_t* config),              \
    (newcomm, nranks, myrank, nId, commIds, config), CommInit | Faultable)                                             \
  X(ncclResult_t, ncclCommSplit, ncclCommSplit,                                                                        \
    (ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config),                                  \
    (comm, color, key, newcomm, config), CommInit | Faultable)                                                         \
  X(ncclResult_t, ncclAllReduce, ncclAllReduce,                                                                        \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,     \
     cudaStream_t stream),                                                                                             \
    (sendbuff, recvbuff, count, datatype, op, comm, stream), Faultable)                                                \
  X(ncclResult_t, ncclBroadcast, ncclBroadcast,                                                                        \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,           \
     cudaStream_t stream),                                                                                             \
    (sendbuff, recvbuff, count, datatype, root, comm, stream), Faultable)                                              \
  X(ncclResult_t, ncclReduce, ncclReduce,                                                                              \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, int root,            \
     ncclComm_t comm, cudaStream_t stream),                                                                            \
    (sendbuff, recvbuff, count, datatype, op, root, comm, stream), Faultable)                                          \
  X(ncclResult_t, ncclAllGather, ncclAllGather,                                                                        \
    (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm,                 \
     cudaStream_t stream),                                                                                             \
    (sendbuff, recvbuff, sendcount, datatype, comm, stream), Faultable)                                                \
  X(ncclResult_t, ncclReduceScatter, ncclReduceScatter,                                                                \
    (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, \
     cudaStream_t stream),                                                                                             \
    (sendbuff, recvbuff, recvcount, datatype, op, comm, stream), Faultable)                                            \
  X(ncclResult_t, ncclSend, ncclSend,                                                                                  \
    (const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream),     \
    (sendbuff, count, datatype, peer, comm, stream), Faultable)                                                        \
  X(ncclResult_t, ncclRecv, ncclRecv,                                                                                  \
    (void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream),           \
    (recvbuff, count, datatype, peer, comm, stream), Faultable)                                                        \
  X(ncclResult_t, ncclCommAbort, ncclCommAbort, (ncclComm_t comm), (comm), 0)                                          \
  X(ncclResult_t, ncclCommDestroy, ncclCommDestroy, (ncclComm_t comm), (comm), 0)
