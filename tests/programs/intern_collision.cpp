// Interns strings and stacks whose hashes all collide, in a process that carries the shim itself
// (linked in, not preloaded: the test hook of shim/intern_table.h is only reachable from inside),
// and prints the ids it got; the trace (CUPROBE_OUT) must hold each string and stack under its
// own id. Threads intern an overlapping set of strings at once: every thread must see the same id
// for the same text.
#include <pthread.h>
#include <stdio.h>

#include <set>
#include <string>
#include <vector>

#include "intern_table.h"
#include "recorder.h"
#include "stacks.h"

using namespace cuprobe;

namespace {

constexpr int kThreads = 4;
constexpr int kThreadStrings = 200;
uint32_t g_ids[kThreads][kThreadStrings];

std::string thread_string(int i) { return "collision-thread-" + std::to_string(i); }

void* intern_from_thread(void* arg) {
  int t = int(reinterpret_cast<intptr_t>(arg));
  for (int k = 0; k < kThreadStrings; ++k) {
    int i = (k * 7 + t * 50) % kThreadStrings;  // each thread in its own order
    g_ids[t][i] = shim::intern_string(thread_string(i).c_str());
  }
  return nullptr;
}

}  // namespace

int main() {
  // What a hooked call does first: set the thread up, which creates the trace file. (A meta record
  // as the process's very first record would create it under the meta writer's mutex, which the
  // process records written next need: the shim never does that.)
  if (shim::thread_setup(shim::t_state) != shim::kThreadReady) return 2;
  shim::g_intern_hash_for_testing = [](uint64_t) -> uint64_t { return 0x5eed5eed5eedull; };

  uint32_t a = shim::intern_string("collision-alpha");
  uint32_t b = shim::intern_string("collision-beta");
  uint32_t a2 = shim::intern_string("collision-alpha");
  uint32_t b2 = shim::intern_string("collision-beta");
  printf("strings %u %u %u %u\n", a, b, a2, b2);

  uint64_t pcs1[3] = {0x1000, 0x2000, 0x3000};
  uint64_t pcs2[3] = {0x1000, 0x2000, 0x3004};
  trace::PyFrame py = {a, b, 42, 0};
  uint32_t s1 = shim::intern_stack(pcs1, 3, &py, 1);
  uint32_t s2 = shim::intern_stack(pcs2, 3, &py, 1);
  uint32_t s3 = shim::intern_stack(pcs1, 3, nullptr, 0);
  uint32_t s1b = shim::intern_stack(pcs1, 3, &py, 1);
  printf("stacks %u %u %u %u\n", s1, s2, s3, s1b);

  pthread_t th[kThreads];
  for (int t = 0; t < kThreads; ++t)
    pthread_create(&th[t], nullptr, intern_from_thread, reinterpret_cast<void*>(intptr_t(t)));
  for (pthread_t& x : th) pthread_join(x, nullptr);
  int disagree = 0;
  std::set<uint32_t> distinct;
  for (int i = 0; i < kThreadStrings; ++i) {
    for (int t = 1; t < kThreads; ++t) disagree += g_ids[t][i] != g_ids[0][i];
    distinct.insert(g_ids[0][i]);
  }
  printf("threads %d %zu\n", disagree, distinct.size());
  for (int i = 0; i < kThreadStrings; ++i) printf("thread-string %d %u\n", i, g_ids[0][i]);
  return 0;
}
