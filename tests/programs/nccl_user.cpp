// A library with NCCL as NEEDED (DT_RPATH to the double), the way libtorch_cuda.so needs
// libnccl.so.2; opened by nccl_init with dlopen, RTLD_LOCAL (NCCL stays out of the global scope,
// as under PyTorch) or RTLD_GLOBAL. It sets communicators up the way ProcessGroupNCCL does and
// prints what each call returned.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "nccl_abi.h"

namespace {

ncclUniqueId make_id(bool valid) {
  ncclUniqueId id;
  for (int i = 0; i < 128; ++i) id.internal[i] = char(i * 7 + 1);  // what the double accepts
  if (!valid) id.internal[127] ^= 1;
  return id;
}

int rank_of(ncclComm_t c) {
  int r = -1;
  return c != nullptr && ncclCommUserRank(c, &r) == ncclSuccess ? r : -1;
}

}  // namespace

// Sets up, in order: a point-to-point pair (2 ranks, rank 1), the world (4 ranks, rank 3), a
// split of the world (2 ranks), a split this process is not part of, a scalable init of 2
// ranks, and an init with a damaged unique id, which fails; then destroys what it set up.
extern "C" __attribute__((visibility("default"))) int nccl_user_run() {
  ncclComm_t pair = nullptr, world = nullptr, half = nullptr, none = nullptr, scalable = nullptr, bad = nullptr;
  ncclUniqueId ids[2] = {make_id(true), make_id(true)};
  int r1 = ncclCommInitRank(&pair, 2, make_id(true), 1);
  int r2 = ncclCommInitRankConfig(&world, 4, make_id(true), 3, nullptr);
  int r3 = ncclCommSplit(world, 0, 5, &half, nullptr);
  int r4 = ncclCommSplit(world, -1, 0, &none, nullptr);
  int r5 = ncclCommInitRankScalable(&scalable, 2, 0, 2, ids, nullptr);
  int r6 = ncclCommInitRank(&bad, 2, make_id(false), 0);
  std::printf("%d %d %d %d %d %d ranks %d %d %d %d %d\n", r1, r2, r3, r4, r5, r6, rank_of(pair), rank_of(world),
              rank_of(half), none == nullptr ? -1 : 99, rank_of(scalable));
  for (ncclComm_t c : {pair, world, half, none, scalable, bad}) {
    if (c != nullptr) ncclCommDestroy(c);  // as ProcessGroupNCCL does at shutdown; LeakSanitizer
  }
  return 0;
}

// A training loop's collectives (issue 32): the world (4 ranks, rank 3), then `steps` steps of an
// allreduce of 1 Mi floats (a gradient bucket) and a 64 Ki-element allgather; prints each call's
// result and how long it took, in milliseconds.
extern "C" __attribute__((visibility("default"))) int nccl_user_steps(int steps) {
  ncclComm_t world = nullptr;
  if (ncclCommInitRankConfig(&world, 4, make_id(true), 3, nullptr) != ncclSuccess) return 12;
  for (int i = 0; i < steps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    int a = ncclAllReduce(nullptr, nullptr, 1 << 20, ncclFloat32, ncclSum, world, nullptr);
    auto t1 = std::chrono::steady_clock::now();
    int g = ncclAllGather(nullptr, nullptr, 1 << 16, ncclFloat32, world, nullptr);
    std::printf("step %d allreduce %d %lld allgather %d\n", i, a,
                static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(t1 - t0).count()), g);
  }
  ncclCommDestroy(world);
  return 0;
}

// A job with two groups (issue 32, comm-size=): the world (4 ranks, rank 3) and a split of it
// (2 ranks, a tensor-parallel group), then `steps` steps of an allreduce on each; prints what
// each returned.
extern "C" __attribute__((visibility("default"))) int nccl_user_groups(int steps) {
  ncclComm_t world = nullptr, half = nullptr;
  if (ncclCommInitRankConfig(&world, 4, make_id(true), 3, nullptr) != ncclSuccess) return 12;
  if (ncclCommSplit(world, 0, 1, &half, nullptr) != ncclSuccess || half == nullptr) return 13;
  for (int i = 0; i < steps; ++i) {
    int w = ncclAllReduce(nullptr, nullptr, 1 << 20, ncclFloat32, ncclSum, world, nullptr);
    int h = ncclAllReduce(nullptr, nullptr, 1 << 10, ncclFloat32, ncclSum, half, nullptr);
    std::printf("step %d world %d half %d\n", i, w, h);
  }
  ncclCommDestroy(half);
  ncclCommDestroy(world);
  return 0;
}

// What PyTorch's NCCL watchdog does when a collective failed or timed out (issue 32): the world
// (4 ranks, rank 3), one allreduce, whose result is printed; if it failed, another thread (the
// watchdog's) aborts the communicator and the process tears itself down (SIGABRT).
extern "C" __attribute__((visibility("default"))) int nccl_user_watchdog() {
  ncclComm_t world = nullptr;
  if (ncclCommInitRankConfig(&world, 4, make_id(true), 3, nullptr) != ncclSuccess) return 12;
  int a = ncclAllReduce(nullptr, nullptr, 1 << 20, ncclFloat32, ncclSum, world, nullptr);
  std::printf("allreduce %d\n", a);
  std::fflush(stdout);
  if (a == ncclSuccess) {
    ncclCommDestroy(world);
    return 0;
  }
  std::thread watchdog([world] { ncclCommAbort(world); });
  watchdog.join();
  std::abort();
}
