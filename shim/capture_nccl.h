// What each NCCL communicator set-up records (nccl_hooks.h): the new communicator, its size and
// this process's rank in it, as call fields; and, for the largest communicator so far, the rank
// and size as process properties (trace::Property::kNcclRank, kNcclWorldSize), which name the
// process's rank when its launcher set no RANK variable.
//
// An init that returns ncclInProgress (a non-blocking communicator, config->blocking = 0) has
// been accepted with the rank and size its caller gave: it counts as set up. ncclCommSplit's
// result is asked of the real library (ncclCommCount, ncclCommUserRank) only once it has
// completed (ncclSuccess and a communicator: NCCL_SPLIT_NOCOLOR gives none).
#pragma once

#include "hook.h"
#include "nccl_abi.h"
#include "process_info.h"

namespace cuprobe::shim {

template <>
struct LibraryTraits<trace::Library::kNccl> {
  static constexpr ncclResult_t kMissing = ncclSystemError;
  static constexpr ncclResult_t kProbe = ncclSystemError;  // required by Interceptor
  static bool ok(ncclResult_t r) { return r == ncclSuccess || r == ncclInProgress; }
  static int device(ThreadState& t) { return current_device(t); }
  static void on_event() {}
};

inline const void* out_comm(ncclResult_t r, const ncclComm_t* c) {
  return (LibraryTraits<trace::Library::kNccl>::ok(r) && c != nullptr) ? static_cast<const void*>(*c) : nullptr;
}

// The fields every communicator set-up starts with, and the process properties.
inline void comm_fields(CallWriter& w, ncclResult_t r, const ncclComm_t* comm, int nranks, int rank) {
  w.p(out_comm(r, comm));
  w.i(nranks);
  w.i(rank);
  if (LibraryTraits<trace::Library::kNccl>::ok(r)) note_nccl_comm(nranks, rank);
}

template <>
struct Capture<ApiId::ncclCommInitRank> {
  static constexpr const char* kFields = "comm:p,nranks:i,rank:i";
  static void after(CallWriter& w, ncclResult_t r, ncclComm_t* comm, int nranks, ncclUniqueId, int rank) {
    comm_fields(w, r, comm, nranks, rank);
  }
};

template <>
struct Capture<ApiId::ncclCommInitRankConfig> {
  static constexpr const char* kFields = "comm:p,nranks:i,rank:i";
  static void after(CallWriter& w, ncclResult_t r, ncclComm_t* comm, int nranks, ncclUniqueId, int rank,
                    ncclConfig_t*) {
    comm_fields(w, r, comm, nranks, rank);
  }
};

template <>
struct Capture<ApiId::ncclCommInitRankScalable> {
  static constexpr const char* kFields = "comm:p,nranks:i,rank:i,ids:i";
  static void after(CallWriter& w, ncclResult_t r, ncclComm_t* comm, int nranks, int myrank, int n_ids,
                    ncclUniqueId*, ncclConfig_t*) {
    comm_fields(w, r, comm, nranks, myrank);
    w.i(n_ids);
  }
};

// The size of a split's new communicator and this process's rank in it, from the real library;
// -1 each when not known.
void split_result(ncclComm_t comm, int* nranks, int* rank);

template <>
struct Capture<ApiId::ncclCommSplit> {
  static constexpr const char* kFields = "comm:p,nranks:i,rank:i,parent:p,color:i,key:i";
  static void after(CallWriter& w, ncclResult_t r, ncclComm_t parent, int color, int key, ncclComm_t* comm,
                    ncclConfig_t*) {
    int nranks = -1, rank = -1;
    if (r == ncclSuccess && comm != nullptr && *comm != nullptr) split_result(*comm, &nranks, &rank);
    w.p(out_comm(r, comm));
    w.i(nranks);
    w.i(rank);
    if (nranks > 0) note_nccl_comm(nranks, rank);
    w.p(parent);
    w.i(color);
    w.i(key);
  }
};

// The collectives (issue 32): the bytes each rank contributes (count × the element's size: what
// size>= filters on), the element count and type, the communicator, the stream (the record's).
inline uint64_t nccl_bytes(size_t count, ncclDataType_t t) {
  static constexpr uint8_t kSize[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};  // ncclInt8 ... ncclFloat8e5m2
  int i = int(t);
  return uint64_t(count) * (i >= 0 && i < int(sizeof kSize) ? kSize[i] : 1);
}

inline void collective_fields(CallWriter& w, size_t count, ncclDataType_t t, ncclComm_t comm, cudaStream_t s) {
  w.u(nccl_bytes(count, t));
  w.u(count);
  w.i(int(t));
  w.p(comm);
  w.stream(s);
}

template <>
struct Capture<ApiId::ncclAllReduce> {
  static constexpr const char* kFields = "size:u,count:u,dtype:i,comm:p";
  static void after(CallWriter& w, ncclResult_t, const void*, void*, size_t count, ncclDataType_t t, ncclRedOp_t,
                    ncclComm_t comm, cudaStream_t s) {
    collective_fields(w, count, t, comm, s);
  }
};

template <>
struct Capture<ApiId::ncclBroadcast> {
  static constexpr const char* kFields = "size:u,count:u,dtype:i,comm:p,root:i";
  static void after(CallWriter& w, ncclResult_t, const void*, void*, size_t count, ncclDataType_t t, int root,
                    ncclComm_t comm, cudaStream_t s) {
    collective_fields(w, count, t, comm, s);
    w.i(root);
  }
};

template <>
struct Capture<ApiId::ncclReduce> {
  static constexpr const char* kFields = "size:u,count:u,dtype:i,comm:p,root:i";
  static void after(CallWriter& w, ncclResult_t, const void*, void*, size_t count, ncclDataType_t t, ncclRedOp_t,
                    int root, ncclComm_t comm, cudaStream_t s) {
    collective_fields(w, count, t, comm, s);
    w.i(root);
  }
};

template <>
struct Capture<ApiId::ncclAllGather> {
  static constexpr const char* kFields = "size:u,count:u,dtype:i,comm:p";
  static void after(CallWriter& w, ncclResult_t, const void*, void*, size_t count, ncclDataType_t t, ncclComm_t comm,
                    cudaStream_t s) {
    collective_fields(w, count, t, comm, s);
  }
};

template <>
struct Capture<ApiId::ncclReduceScatter> {
  static constexpr const char* kFields = "size:u,count:u,dtype:i,comm:p";
  static void after(CallWriter& w, ncclResult_t, const void*, void*, size_t count, ncclDataType_t t, ncclRedOp_t,
                    ncclComm_t comm, cudaStream_t s) {
    collective_fields(w, count, t, comm, s);
  }
};

template <>
struct Capture<ApiId::ncclSend> {
  static constexpr const char* kFields = "size:u,count:u,dtype:i,comm:p,peer:i";
  static void after(CallWriter& w, ncclResult_t, const void*, size_t count, ncclDataType_t t, int peer, ncclComm_t comm,
                    cudaStream_t s) {
    collective_fields(w, count, t, comm, s);
    w.i(peer);
  }
};

template <>
struct Capture<ApiId::ncclRecv> {
  static constexpr const char* kFields = "size:u,count:u,dtype:i,comm:p,peer:i";
  static void after(CallWriter& w, ncclResult_t, void*, size_t count, ncclDataType_t t, int peer, ncclComm_t comm,
                    cudaStream_t s) {
    collective_fields(w, count, t, comm, s);
    w.i(peer);
  }
};

// A communicator's end: aborted (PyTorch's watchdog, after a timeout or an error) or destroyed.
struct CommEndCapture {
  static constexpr const char* kFields = "comm:p";
  static void after(CallWriter& w, ncclResult_t, ncclComm_t comm) { w.p(comm); }
};
template <>
struct Capture<ApiId::ncclCommAbort> : CommEndCapture {};
template <>
struct Capture<ApiId::ncclCommDestroy> : CommEndCapture {};

}  // namespace cuprobe::shim
