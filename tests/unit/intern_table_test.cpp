// shim/intern_table.h: keys are told apart by content whatever their hashes, a key is found under
// its first id, what cannot be remembered still gets a fresh id each time, and threads that
// intern the same keys at once, with no lock, agree on every id.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "shim/intern_table.h"

namespace cuprobe::shim {
namespace {

template <typename Table>
uint32_t intern(Table& t, const std::string& key, uint64_t hash, int* fresh = nullptr) {
  return t
      .intern(key.data(), key.size(), hash,
              [&](uint32_t) {
                if (fresh) ++*fresh;
              })
      .id;
}

TEST(InternTable, KeysWithTheSameHashGetTheirOwnIds) {
  auto t = std::make_unique<InternTable<16, 4096>>();
  int fresh = 0;
  const std::vector<std::string> keys = {"alpha", "beta", "alphabet", "alph", ""};
  std::vector<uint32_t> ids;
  for (const auto& k : keys) ids.push_back(intern(*t, k, 7, &fresh));
  EXPECT_EQ(fresh, 5);
  EXPECT_EQ(std::set<uint32_t>(ids.begin(), ids.end()).size(), keys.size()) << "a collision shared an id";
  EXPECT_EQ(std::set<uint32_t>(ids.begin(), ids.end()).count(0), 0u);
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(intern(*t, keys[i], 7, &fresh), ids[i]) << keys[i];
    EXPECT_EQ(t->find(keys[i].data(), keys[i].size(), 7), ids[i]) << keys[i];
  }
  EXPECT_EQ(fresh, 5) << "a known key ran on_new again";
  EXPECT_EQ(t->find("gamma", 5, 7), 0u);
  EXPECT_EQ(t->find("alpha", 5, 8), 0u) << "found under another hash";
}

TEST(InternTable, TheTestHookMakesEveryHashCollide) {
  auto t = std::make_unique<InternTable<64, 4096>>();
  g_intern_hash_for_testing = [](uint64_t) -> uint64_t { return 3; };
  uint32_t a = intern(*t, "first", fnv1a64("first", 5));
  uint32_t b = intern(*t, "second", fnv1a64("second", 6));
  uint32_t a2 = t->find("first", 5, fnv1a64("first", 5));
  g_intern_hash_for_testing = nullptr;
  EXPECT_NE(a, b);
  EXPECT_EQ(a2, a);
  EXPECT_EQ(t->find("first", 5, fnv1a64("first", 5)), 0u) << "stored under the hook's hash";
}

TEST(InternTable, WhatCannotBeRememberedGetsAFreshIdEachTime) {
  auto probes = std::make_unique<InternTable<8, 4096, 2>>();  // two keys per hash at most
  EXPECT_TRUE(probes->intern("a", 1, 5, [](uint32_t) {}).remembered);
  EXPECT_TRUE(probes->intern("b", 1, 5, [](uint32_t) {}).remembered);
  int fresh = 0;
  auto c1 = probes->intern("c", 1, 5, [&](uint32_t) { ++fresh; });
  auto c2 = probes->intern("c", 1, 5, [&](uint32_t) { ++fresh; });
  EXPECT_FALSE(c1.remembered);
  EXPECT_FALSE(c2.remembered);
  EXPECT_NE(c1.id, c2.id);
  EXPECT_EQ(fresh, 2) << "each unremembered intern must write its record";

  auto arena = std::make_unique<InternTable<64, 64>>();  // room for 2 short keys (16 + 8 bytes each)
  std::string big(100, 'x');
  auto r = arena->intern(big.data(), big.size(), 1, [](uint32_t) {});
  EXPECT_FALSE(r.remembered);
  EXPECT_NE(r.id, 0u);
  EXPECT_TRUE(arena->intern("k1", 2, 1, [](uint32_t) {}).remembered);
  EXPECT_TRUE(arena->intern("k2", 2, 2, [](uint32_t) {}).remembered);
  EXPECT_FALSE(arena->intern("k3", 2, 3, [](uint32_t) {}).remembered);
  EXPECT_NE(arena->find("k1", 2, 1), 0u);
}

TEST(InternTable, ResetForgetsEverythingAndStartsIdsAgain) {
  auto t = std::make_unique<InternTable<16, 4096>>();
  uint32_t first = intern(*t, "one", 1);
  intern(*t, "two", 2);
  t->reset();
  EXPECT_EQ(t->find("one", 3, 1), 0u);
  EXPECT_EQ(intern(*t, "two", 2), first);
}

TEST(InternTable, ThreadsInterningTheSameKeysAtOnceAgreeOnEveryId) {
  constexpr int kThreads = 8;
  constexpr int kKeys = 1000;
  auto t = std::make_unique<InternTable<2048, 1u << 18>>();
  std::vector<std::string> keys;
  for (int i = 0; i < kKeys; ++i) keys.push_back("key-" + std::to_string(i));
  std::vector<std::vector<uint32_t>> seen(kThreads, std::vector<uint32_t>(kKeys));
  std::atomic<int> fresh{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([&, th] {
      while (!go.load()) {
      }
      for (int k = 0; k < kKeys; ++k) {
        int i = (k * 7 + th * 131) % kKeys;  // each thread in its own order
        const std::string& key = keys[i];
        uint64_t h = fnv1a64(key.data(), key.size()) % 16;  // 16 hashes for 1000 keys: long chains
        uint32_t id = t->find(key.data(), key.size(), h);
        if (id == 0) id = t->intern(key.data(), key.size(), h, [&](uint32_t) { fresh++; }).id;
        seen[th][i] = id;
      }
    });
  }
  go = true;
  for (auto& th : threads) th.join();
  std::set<uint32_t> distinct;
  for (int i = 0; i < kKeys; ++i) {
    for (int th = 1; th < kThreads; ++th) ASSERT_EQ(seen[th][i], seen[0][i]) << keys[i];
    EXPECT_NE(seen[0][i], 0u);
    distinct.insert(seen[0][i]);
    uint64_t h = fnv1a64(keys[i].data(), keys[i].size()) % 16;
    EXPECT_EQ(t->find(keys[i].data(), keys[i].size(), h), seen[0][i]);
  }
  EXPECT_EQ(distinct.size(), size_t(kKeys));
  EXPECT_GE(fresh.load(), kKeys);
}

}  // namespace
}  // namespace cuprobe::shim
