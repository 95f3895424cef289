// Device memory replayed from allocations and frees: which blocks are live, and how many bytes
// per device, now and at the peak. The one replay behind the memory tracker (`cuprobe analyze`)
// and the export timeline (report, Perfetto, SQLite), so that every output states the same live
// and peak numbers for the same trace.
//
// The rules of the replay:
// - addresses and physical handles (cuMemCreate) are separate name spaces: a handle's value never
//   releases an address;
// - an allocation at an address already live means the trace did not see that block's free (it
//   went through a path cuprobe does not wrap, or before a gap in the trace): the old block is
//   gone first, and the caller is told which block that was;
// - a free of an address that is not live (allocated before the recording began, or not device
//   memory) changes nothing.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>

namespace cuprobe::analysis {

// `Block`: what the caller keeps of each live allocation besides its size and device.
template <typename Block>
class MemoryReplay {
 public:
  struct Live {
    uint64_t size = 0;
    int device = -1;
    Block block{};
  };
  struct Totals {
    uint64_t live = 0;  // bytes live on the device now
    uint64_t peak = 0;  // the most that was live at once
  };

  // A successful allocation. Returns the block it replaced (a free the trace did not see).
  std::optional<Live> alloc(bool physical, uint64_t address, uint64_t size, int device, Block block) {
    std::optional<Live> replaced = free(physical, address);
    live_.emplace(key(physical, address), Live{size, device, std::move(block)});
    Totals& t = totals_[device];
    t.live += size;
    t.peak = std::max(t.peak, t.live);
    return replaced;
  }

  // A successful free. Returns the block it released, if it was live.
  std::optional<Live> free(bool physical, uint64_t address) {
    auto it = live_.find(key(physical, address));
    if (it == live_.end()) return std::nullopt;
    Live gone = std::move(it->second);
    live_.erase(it);
    Totals& t = totals_[gone.device];
    t.live -= std::min(t.live, gone.size);
    return gone;
  }

  const Live* find(bool physical, uint64_t address) const {
    auto it = live_.find(key(physical, address));
    return it == live_.end() ? nullptr : &it->second;
  }
  Totals totals(int device) const {
    auto it = totals_.find(device);
    return it == totals_.end() ? Totals{} : it->second;
  }
  // Every live block, by key (address() gives back its address or handle).
  const std::unordered_map<uint64_t, Live>& live() const { return live_; }
  static uint64_t address(uint64_t key) { return key & ~kHandleTag; }

 private:
  static constexpr uint64_t kHandleTag = 1ull << 63;
  static uint64_t key(bool physical, uint64_t address) { return physical ? address | kHandleTag : address; }

  std::unordered_map<uint64_t, Live> live_;
  std::map<int, Totals> totals_;
};

}  // namespace cuprobe::analysis
