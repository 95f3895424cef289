// Test double of libnccl.so.2 (same soname), as far as the shim hooks it: every function of the
// shim's NCCL hook table exists here with nccl.h's signature (checked below), plus the queries
// the shim makes of the real library (ncclCommCount, ncclCommUserRank, ncclGetVersion).
//
// A communicator is a size and a rank; nothing is communicated. An init checks its arguments as
// NCCL does (ncclInvalidArgument for a rank outside [0, nranks)) and also that the unique id
// arrived intact: byte i of a valid id is (char)(i * 7 + 1), so an id mangled on its way through
// the shim (ncclUniqueId is 128 bytes passed by value) fails with ncclInvalidArgument.
// ncclCommSplit gives color >= 0 a communicator of half the parent's size (at least 1) in which
// this process's rank is key modulo that size; NCCL_SPLIT_NOCOLOR (-1) gives none (NULL).
#include <type_traits>

#include "cuprobe/api_table.h"
#include "nccl_abi.h"

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

struct ncclComm {
  int nranks;
  int rank;
};

namespace {

bool valid_id(const ncclUniqueId& id) {
  for (int i = 0; i < 128; ++i) {
    if (id.internal[i] != char(i * 7 + 1)) return false;
  }
  return true;
}

ncclResult_t make_comm(ncclComm_t* comm, int nranks, int rank, bool id_ok) {
  if (comm == nullptr || nranks <= 0 || rank < 0 || rank >= nranks || !id_ok) return ncclInvalidArgument;
  *comm = new ncclComm{nranks, rank};
  return ncclSuccess;
}

}  // namespace

FAKE_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return make_comm(comm, nranks, rank, valid_id(commId));
}

FAKE_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                                ncclConfig_t*) {
  return make_comm(comm, nranks, rank, valid_id(commId));
}

FAKE_EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                                  ncclUniqueId* commIds, ncclConfig_t*) {
  bool ok = nId > 0 && commIds != nullptr;
  for (int i = 0; ok && i < nId; ++i) ok = valid_id(commIds[i]);
  return make_comm(newcomm, nranks, myrank, ok);
}

FAKE_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t*) {
  if (comm == nullptr || newcomm == nullptr || key < 0) return ncclInvalidArgument;
  if (color == -1) {  // NCCL_SPLIT_NOCOLOR
    *newcomm = nullptr;
    return ncclSuccess;
  }
  int n = comm->nranks / 2 > 0 ? comm->nranks / 2 : 1;
  return make_comm(newcomm, n, key % n, true);
}

// NCCL 2.27.3 (NCCL_VERSION_CODE since 2.9: major*10000 + minor*100 + patch).
FAKE_EXPORT ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return ncclInvalidArgument;
  *version = 22703;
  return ncclSuccess;
}

FAKE_EXPORT ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (comm == nullptr || count == nullptr) return ncclInvalidArgument;
  *count = comm->nranks;
  return ncclSuccess;
}

FAKE_EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (comm == nullptr || rank == nullptr) return ncclInvalidArgument;
  *rank = comm->rank;
  return ncclSuccess;
}

FAKE_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  delete comm;
  return ncclSuccess;
}

FAKE_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  delete comm;
  return ncclSuccess;
}

// The collectives: nothing is communicated; a communicator must exist.
FAKE_EXPORT ncclResult_t ncclAllReduce(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t comm,
                                       cudaStream_t) {
  return comm == nullptr ? ncclInvalidArgument : ncclSuccess;
}
FAKE_EXPORT ncclResult_t ncclBroadcast(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t comm, cudaStream_t) {
  return comm == nullptr ? ncclInvalidArgument : ncclSuccess;
}
FAKE_EXPORT ncclResult_t ncclReduce(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t comm,
                                    cudaStream_t) {
  return comm == nullptr ? ncclInvalidArgument : ncclSuccess;
}
FAKE_EXPORT ncclResult_t ncclAllGather(const void*, void*, size_t, ncclDataType_t, ncclComm_t comm, cudaStream_t) {
  return comm == nullptr ? ncclInvalidArgument : ncclSuccess;
}
FAKE_EXPORT ncclResult_t ncclReduceScatter(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t comm,
                                           cudaStream_t) {
  return comm == nullptr ? ncclInvalidArgument : ncclSuccess;
}
FAKE_EXPORT ncclResult_t ncclSend(const void*, size_t, ncclDataType_t, int, ncclComm_t comm, cudaStream_t) {
  return comm == nullptr ? ncclInvalidArgument : ncclSuccess;
}
FAKE_EXPORT ncclResult_t ncclRecv(void*, size_t, ncclDataType_t, int, ncclComm_t comm, cudaStream_t) {
  return comm == nullptr ? ncclInvalidArgument : ncclSuccess;
}

#define FAKE_NCCL_CHECK(ret, name, sig, params, args, flags)         \
  static_assert(std::is_same_v<decltype(&::name), ret(*) params>, \
                "fake_nccl.cpp: " #name " differs from the shim's hook table");
CUPROBE_NCCL_HOOKS(FAKE_NCCL_CHECK)
#undef FAKE_NCCL_CHECK
