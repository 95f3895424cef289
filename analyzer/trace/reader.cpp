// Trace file reader; see reader.h.
// Before reader.h: the API table's flag names are read in a scope where result.h's Error would
// make `Error` ambiguous.
// clang-format off
#include "cuprobe/api_table.h"
#include "trace/reader.h"
// clang-format on

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <queue>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "problem_text.h"
#include "safe_files.h"
#include "trace/zstd_io.h"

namespace cuprobe::reader {

namespace fs = std::filesystem;

int Api::field_index(const std::string& field) const {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].name == field) return int(i);
  }
  return -1;
}

const char* property_name(uint32_t key) {
  switch (trace::Property(key)) {
    case trace::Property::kCudaRuntimeVersion: return "cuda_runtime_version";
    case trace::Property::kCudaDriverVersion: return "cuda_driver_version";
    case trace::Property::kCudnnVersion: return "cudnn_version";
    case trace::Property::kCudnnCudartVersion: return "cudnn_cudart_version";
    case trace::Property::kLaunchEvents: return "launch_events";
    case trace::Property::kNcclRank: return "nccl_rank";
    case trace::Property::kNcclWorldSize: return "nccl_world_size";
    case trace::Property::kPinnedPlans: return "pinned_plans";
    case trace::Property::kSearchBudget: return "search_budget";
    case trace::Property::kEnvironment:     // "environment": an object of its own
    case trace::Property::kLibraryVersion:  // "library_versions": likewise
      return nullptr;
  }
  return nullptr;
}

const char* library_name(trace::Library lib) {
  switch (lib) {
    case trace::Library::kCudart: return "cudart";
    case trace::Library::kCudnn: return "cudnn";
    case trace::Library::kDriver: return "driver";
    case trace::Library::kTorch: return "torch";
    case trace::Library::kNccl: return "nccl";
    case trace::Library::kCublasLt: return "cublaslt";
  }
  return "unknown";
}

void Clock::init(trace::ClockKind kind, double hint, std::vector<std::pair<uint64_t, uint64_t>> anchors) {
  identity_ = kind == trace::ClockKind::kMonotonicNs;
  hint_ = hint > 0 && std::isfinite(hint) ? hint : 1.0;
  std::sort(anchors.begin(), anchors.end());
  anchors_.clear();
  // Keep anchors at least 1 ms apart whose ticks and nanoseconds both increase: each pair is
  // read with a few tens of nanoseconds between its two halves, which would bend the line
  // between anchors that are close together.
  // The last anchor (the run's end, when it ended normally) is kept whatever its distance: a
  // call just before the end must not be put after it by a rate extrapolated from earlier
  // anchors (a CI run put three calls 0.5 us past the end of a 1 ms process that way); it
  // takes the place of a kept anchor closer than 1 ms to it, unless that is the first.
  auto increases = [&](const std::pair<uint64_t, uint64_t>& a) {
    return a.first > anchors_.back().first && a.second > anchors_.back().second;
  };
  for (size_t i = 0; i < anchors.size(); ++i) {
    const auto& a = anchors[i];
    if (a.first == 0 && a.second == 0) continue;
    if (anchors_.empty()) {
      anchors_.push_back(a);
      continue;
    }
    if (!increases(a)) continue;
    if (a.second >= anchors_.back().second + 1000000) {
      anchors_.push_back(a);
    } else if (i + 1 == anchors.size()) {
      if (anchors_.size() > 1) anchors_.pop_back();
      anchors_.push_back(a);
    }
  }
  if (anchors_.size() >= 2) {
    rate_ = double(anchors_.back().first - anchors_.front().first) /
            double(anchors_.back().second - anchors_.front().second);
  } else {
    rate_ = hint_;
  }
}

size_t Clock::segment_of(uint64_t ticks) const {
  return size_t(std::upper_bound(anchors_.begin(), anchors_.end(), std::make_pair(ticks, UINT64_MAX)) -
                anchors_.begin());
}

// Piecewise linear through the anchors (monotonic, exact at each anchor); the overall rate
// before the first and after the last.
double Clock::at(uint64_t ticks, size_t segment) const {
  if (segment == 0) return double(anchors_.front().second) - double(anchors_.front().first - ticks) / rate_;
  if (segment == anchors_.size()) return double(anchors_.back().second) + double(ticks - anchors_.back().first) / rate_;
  const auto& a = anchors_[segment - 1];
  const auto& b = anchors_[segment];
  return double(a.second) + double(ticks - a.first) * double(b.second - a.second) / double(b.first - a.first);
}

namespace {
// Nanoseconds as a double into the unsigned range (NaN and negative: 0; beyond: the maximum).
uint64_t clamp_ns(double ns) {
  if (!(ns > 0)) return 0;
  if (ns >= 18446744073709549568.0) return UINT64_MAX;
  return uint64_t(ns);
}
}  // namespace

uint64_t Clock::to_ns(uint64_t ticks) const {
  if (identity_) return ticks;
  if (anchors_.empty()) return clamp_ns(double(ticks) / hint_);
  return clamp_ns(at(ticks, segment_of(ticks)));
}

uint64_t Clock::duration_ns(uint64_t start, uint64_t dur) const {
  if (identity_) return dur;
  uint64_t a = to_ns(start);
  uint64_t b = to_ns(start + dur < start ? UINT64_MAX : start + dur);
  return b > a ? b - a : 0;
}

void Clock::convert(uint64_t start, uint64_t dur, size_t* segment, uint64_t* ts_ns, uint64_t* dur_ns) const {
  if (identity_ || anchors_.empty()) {
    *ts_ns = to_ns(start);
    *dur_ns = duration_ns(start, dur);
    return;
  }
  auto inside = [&](uint64_t t, size_t s) {
    return (s == 0 || anchors_[s - 1].first <= t) && (s == anchors_.size() || t < anchors_[s].first);
  };
  if (*segment > anchors_.size() || !inside(start, *segment)) *segment = segment_of(start);
  double a = at(start, *segment);
  uint64_t end = start + dur < start ? UINT64_MAX : start + dur;
  double b = inside(end, *segment) ? at(end, *segment) : at(end, segment_of(end));
  *ts_ns = clamp_ns(a);
  uint64_t e = clamp_ns(b);
  *dur_ns = e > *ts_ns ? e - *ts_ns : 0;
}

// The SIGBUS guard. A mapped file that shrinks while it is read (another process truncates
// it, or its disk goes away) raises SIGBUS on the next access to a page past its new end. The
// guard maps a page of zeros over the faulting page instead, so reading goes on and meets what
// the reader already handles (a chunk or record of zeros, reported as damaged), and the trace
// says that the file changed. Faults outside the mappings registered here go to the handler
// that was there before (or end the process as they would have).
namespace {

constexpr int kGuardSlots = 4096;
struct GuardSlot {
  std::atomic<uintptr_t> base{0};
  std::atomic<size_t> size{0};
  std::atomic<uint64_t> faults{0};
};
GuardSlot g_guard[kGuardSlots];
std::atomic<bool> g_guard_installed{false};
struct sigaction g_previous_bus;
uintptr_t g_page_mask = ~uintptr_t(4095);

void on_sigbus(int sig, siginfo_t* info, void* context) {
  auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
  for (GuardSlot& slot : g_guard) {
    uintptr_t base = slot.base.load(std::memory_order_acquire);
    if (base == 0 || addr < base || addr - base >= slot.size.load(std::memory_order_relaxed)) continue;
    void* page = reinterpret_cast<void*>(addr & g_page_mask);
    if (mmap(page, ~g_page_mask + 1, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
      slot.faults.fetch_add(1, std::memory_order_relaxed);
      return;  // the access is retried and reads zeros
    }
    break;
  }
  if ((g_previous_bus.sa_flags & SA_SIGINFO) && g_previous_bus.sa_sigaction != nullptr) {
    g_previous_bus.sa_sigaction(sig, info, context);
  } else if (!(g_previous_bus.sa_flags & SA_SIGINFO) && g_previous_bus.sa_handler != SIG_DFL &&
             g_previous_bus.sa_handler != SIG_IGN) {
    g_previous_bus.sa_handler(sig);
  } else {
    signal(SIGBUS, SIG_DFL);  // the fault repeats on return and ends the process as it would have
  }
}

int guard_mapping(const void* base, size_t size) {
  if (!g_guard_installed.exchange(true)) {
    long page = sysconf(_SC_PAGESIZE);
    if (page > 0) g_page_mask = ~uintptr_t(page - 1);
    struct sigaction sa {};
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &g_previous_bus);
  }
  for (int i = 0; i < kGuardSlots; ++i) {
    uintptr_t expected = 0;
    if (g_guard[i].base.load(std::memory_order_relaxed) != 0) continue;
    g_guard[i].size.store(size, std::memory_order_relaxed);
    g_guard[i].faults.store(0, std::memory_order_relaxed);
    if (g_guard[i].base.compare_exchange_strong(expected, reinterpret_cast<uintptr_t>(base), std::memory_order_release)) {
      return i;
    }
  }
  return -1;  // more files open than slots: unguarded
}

}  // namespace

Result<std::unique_ptr<TraceFile>> TraceFile::open(const std::string& path) {
  std::unique_ptr<TraceFile> f(new TraceFile());
  f->path_ = path;
  std::string error;
  if (!f->load(&error)) return Error{fmt::format("{}: {}", path, error)};
  return f;
}

// Maps every page in one call (MADV_POPULATE_READ, Linux 5.14) instead of a fault per page,
// which costs microseconds each on virtual machines; older kernels fault pages in as usual.
// A packed trace (zstd) is unpacked again for each pass: its memory is given back in between.
void TraceFile::map_in() const {
  constexpr int kMadvPopulateRead = 22;
  if (packed_ && base_ == nullptr) {
    std::string error;
    if (!unpack(&error)) note(fmt::format("cannot unpack it again for a pass over its calls: {}", error));
    return;
  }
  if (base_ != nullptr) madvise(const_cast<char*>(base_), size_, kMadvPopulateRead);
}

// The file is mapped read-only and private: dropped pages are read from the file again on access.
// A packed trace's unpacked copy is anonymous memory: it goes, and map_in unpacks it again.
void TraceFile::release_events() const {
  if (base_ == nullptr) return;
  if (packed_) {
    munmap(const_cast<char*>(base_), size_);
    base_ = nullptr;
    return;
  }
  madvise(const_cast<char*>(base_), size_, MADV_DONTNEED);
}

// Unpacks the packed file into anonymous memory (base_); the same bytes each time.
bool TraceFile::unpack(std::string* error) const {
  int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    *error = fmt::format("cannot open: {}", std::strerror(errno));
    return false;
  }
  auto u = zstd::unpack_fd(fd, "its zstd data", zstd::default_unpack_limit());
  ::close(fd);
  if (!u) {
    *error = u.error().message;
    return false;
  }
  if (size_ != 0 && u->size != size_) {
    munmap(u->base, u->size);
    *error = fmt::format("it unpacked to {} bytes now, {} before (the file changed)", u->size, size_);
    return false;
  }
  base_ = u->base;
  size_ = u->size;
  return true;
}

TraceFile::~TraceFile() {
  if (guard_slot_ >= 0) g_guard[guard_slot_].base.store(0, std::memory_order_release);
  if (base_ != nullptr) munmap(const_cast<char*>(base_), size_);
}

// Whether the file is still the one that was opened, as it was; says so once when it is not.
void TraceFile::check_unchanged(const char* when) const {
  if (change_noted_) return;
  uint64_t faults = guard_slot_ >= 0 ? g_guard[guard_slot_].faults.load(std::memory_order_relaxed) : 0;
  struct stat st {};
  bool gone = ::stat(path_.c_str(), &st) != 0;
  bool other = !gone && (uint64_t(st.st_dev) != dev_ || uint64_t(st.st_ino) != ino_);
  bool shrank = !gone && !other && uint64_t(st.st_size) < file_size_;
  uint64_t mtime = uint64_t(st.st_mtim.tv_sec) * 1000000000ull + uint64_t(st.st_mtim.tv_nsec);
  bool written = !gone && !other && mtime != mtime_ns_;
  if (faults == 0 && !shrank && !written) return;
  change_noted_ = true;
  if (faults > 0 || shrank) {
    note(
        fmt::format("the file shrank {} (from {} to {} bytes){}: what was cut off reads as empty; copy a trace "
                    "before reading it while something else writes it",
                    when, file_size_, gone || other ? 0 : uint64_t(st.st_size),
                    faults > 0 ? fmt::format(", {} pages of it were gone while being read", faults) : ""));
  } else {
    note(fmt::format("the file was written to {} (a job still running?): this reading shows it as it was when it "
                     "was opened",
                     when));
  }
}

const std::string& Trace::api_name(uint16_t id) const {
  static const std::string kUnknown = "unknown";
  const Api* a = api(id);
  return a ? a->name : kUnknown;
}

const Stack* Trace::stack(StackId id) const {
  auto it = id <= UINT32_MAX ? stacks_.find(uint32_t(id)) : stacks_.end();
  return it == stacks_.end() ? nullptr : &it->second;
}

const Module* Trace::module_of(uint64_t pc) const {
  auto it = std::upper_bound(modules_.begin(), modules_.end(), pc, [](uint64_t v, const Module& m) { return v < m.start; });
  if (it == modules_.begin()) return nullptr;
  --it;
  return pc < it->end ? &*it : nullptr;
}

const FaultRule* Trace::fault_rule(int index) const {
  for (const FaultRule& r : fault_rules_)
    if (r.index == index) return &r;
  return nullptr;
}

const std::string& Trace::knobs_text(KnobsId id) const {
  static const std::string kNone;
  auto it = knob_sets_.find(uint32_t(id));
  return id <= UINT32_MAX && it != knob_sets_.end() ? it->second.text : kNone;
}

const std::vector<trace::Knob>* Trace::knobs(KnobsId id) const {
  auto it = knob_sets_.find(uint32_t(id));
  return id <= UINT32_MAX && it != knob_sets_.end() && !it->second.knobs.empty() ? &it->second.knobs : nullptr;
}

const std::vector<trace::AlgoResult>* Trace::algo_results(AlgoResultsId id) const {
  auto it = algo_results_.find(uint32_t(id));
  return id <= UINT32_MAX && it != algo_results_.end() ? &it->second : nullptr;
}

uint32_t Trace::add_problem(const std::string& text, uint64_t hash, const trace::ProblemDesc* desc) {
  if (auto it = problem_by_text_.find(text); it != problem_by_text_.end()) {
    Problem& p = problems_[it->second];
    if (desc != nullptr && !p.typed) {  // the typed description came after a call named it
      p.typed = true;
      p.desc = *desc;
      p.hash = hash;
    }
    // Two descriptions with one text (a math type apart) are one problem to a reader of text.
    return p.id;
  }
  if (problems_.empty()) problems_.resize(1);
  Problem p;
  p.id = uint32_t(problems_.size());
  p.hash = hash;
  p.text = text;
  if (desc != nullptr) {
    p.typed = true;
    p.desc = *desc;
  }
  problem_by_text_.emplace(text, p.id);
  problems_.push_back(std::move(p));
  return problems_.back().id;
}

uint32_t Trace::add_knobs_text(const std::string& text) {
  if (text.empty()) return 0;
  if (auto it = knobs_by_text_.find(text); it != knobs_by_text_.end()) return it->second;
  uint32_t id = uint32_t(knob_sets_.size() + 1);
  while (knob_sets_.count(id)) ++id;
  knob_sets_[id].text = text;
  knobs_by_text_.emplace(text, id);
  return id;
}

void TraceBuilder::identity(std::string path, uint32_t pid) {
  t_.path_ = std::move(path);
  t_.pid_ = pid;
  t_.process_.pid = pid;
}

void TraceBuilder::run(Run r) {
  t_.has_process_ = true;
  t_.process_ = std::move(r.process);
  t_.start_mono_ns_ = r.start_ns;
  t_.start_real_ns_ = r.start_wall_ns;
  t_.end_mono_ns_ = r.end_ns;
  t_.state_ = r.state;
  t_.end_signal_ = r.end_signal;
  t_.coverage_ = r.coverage;
  t_.thread_count_ = r.threads;
  for (const auto& [key, value] : r.properties) t_.properties_[key] = value;
  t_.devices_ = std::move(r.devices);
  std::copy(std::begin(r.stats), std::end(r.stats), std::begin(t_.stats_));
  t_.handles_ = std::move(r.handles);
}

uint16_t TraceBuilder::add_api(Api a) {
  t_.apis_.push_back(std::move(a));
  return uint16_t(t_.apis_.size() - 1);
}

uint32_t TraceBuilder::add_string(const std::string& s, const std::string** kept) {
  uint32_t id = uint32_t(t_.strings_.size() + 1);
  *kept = &t_.strings_.emplace(id, s).first->second;
  return id;
}

uint32_t TraceBuilder::add_algo_results(std::vector<trace::AlgoResult> results) {
  uint32_t id = uint32_t(t_.algo_results_.size() + 1);
  t_.algo_results_[id] = std::move(results);
  return id;
}

void TraceBuilder::call_kept(uint64_t end_ns) {
  t_.last_event_ns_ = std::max(t_.last_event_ns_, end_ns);
  ++t_.call_records_;
}

FaultRule* TraceBuilder::fault_rule(int index) {
  for (FaultRule& r : t_.fault_rules_) {
    if (r.index == index) return &r;
  }
  return nullptr;
}

void TraceBuilder::module(Module m) {
  auto& modules = t_.modules_;
  auto it = std::lower_bound(modules.begin(), modules.end(), m.start,
                             [](const Module& a, uint64_t v) { return a.start < v; });
  if (it != modules.end() && it->start == m.start && it->path == m.path) *it = std::move(m);
  else modules.insert(it, std::move(m));
}

void TraceBuilder::facts_part(const std::string& key, nlohmann::json value, bool items) {
  if (!t_.facts_) t_.facts_ = std::make_shared<nlohmann::json>(nlohmann::json::object());
  nlohmann::json& slot = (*t_.facts_)[key];
  if (items && slot.is_array()) {
    for (auto& v : value) slot.push_back(std::move(v));
  } else {
    slot = std::move(value);
  }
}

void TraceBuilder::restore_integrity(const Trace::Integrity& integrity, uint64_t damaged_records,
                                     uint64_t ignored_events) {
  t_.integrity_ = integrity;
  t_.damaged_records_ = damaged_records;
  t_.ignored_events_ = ignored_events;
}

void TraceBuilder::damaged(uint64_t records, bool ignored) {
  t_.damaged_records_ += records;
  if (ignored) t_.ignored_events_ += records;
}

const std::string& Trace::string(StringId id) const {
  static const std::string kEmpty;
  auto it = id <= UINT32_MAX ? strings_.find(uint32_t(id)) : strings_.end();
  return it == strings_.end() ? kEmpty : it->second;
}

namespace {

// Words after a call record's fixed part: arguments, then [stream][64-bit duration][fault].
uint32_t tail_words(const trace::CallRecord* r) { return (r->h.size - uint32_t(sizeof(trace::CallRecord))) / 8; }
uint32_t optional_words(const trace::CallRecord* r) {
  return ((r->h.flags & trace::kCallHasStream) ? 1 : 0) + ((r->h.flags & trace::kCallLongDuration) ? 1 : 0) +
         ((r->h.flags & trace::kCallInjected) ? 1 : 0) + ((r->h.flags & trace::kCallHasStack) ? 1 : 0);
}

uint64_t call_duration(const trace::CallRecord* r) {
  uint32_t after = ((r->h.flags & trace::kCallInjected) ? 1 : 0) + ((r->h.flags & trace::kCallHasStack) ? 1 : 0);
  if (!(r->h.flags & trace::kCallLongDuration) || tail_words(r) < 1 + after) return r->dur_ticks;
  return r->tail[tail_words(r) - 1 - after];
}

std::string take(const char*& p, uint32_t n) {
  std::string s(p, n);
  p += n;
  return s;
}

std::vector<Field> parse_fields(const std::string& spec) {
  std::vector<Field> out;
  size_t start = 0;
  while (start < spec.size()) {
    size_t end = spec.find(',', start);
    if (end == std::string::npos) end = spec.size();
    std::string item = spec.substr(start, end - start);
    Field f;
    size_t colon = item.find(':');
    f.name = item.substr(0, colon);
    f.type = (colon != std::string::npos && colon + 1 < item.size()) ? item[colon + 1] : 'u';
    out.push_back(f);
    start = end + 1;
  }
  return out;
}


std::string format_uuid(const uint8_t* u) {
  return fmt::format("GPU-{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}",
                     u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
                     u[15]);
}

}  // namespace

// Opens and maps the file: regular files only, never blocking, at least a header long.
bool TraceFile::map_file(std::string* error) {
  // Never blocks: a FIFO or a device named as a trace is refused, not waited on.
  int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    *error = fmt::format("cannot open: {}", std::strerror(errno));
    return false;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    *error = fmt::format("cannot stat: {}", std::strerror(errno));
    ::close(fd);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    *error = fmt::format("not a regular file ({}); cuprobe reads trace files, run directories, or JSON Lines on "
                         "standard input ('-')",
                         files::kind_of(st.st_mode));
    return false;
  }
  size_ = size_t(st.st_size);
  file_size_ = uint64_t(st.st_size);
  dev_ = uint64_t(st.st_dev);
  ino_ = uint64_t(st.st_ino);
  mtime_ns_ = uint64_t(st.st_mtim.tv_sec) * 1000000000ull + uint64_t(st.st_mtim.tv_nsec);
  if (zstd::fd_has_magic(fd)) {
    // Packed (cuprobe pack): read from an unpacked copy in memory.
    ::close(fd);
    packed_ = true;
    size_ = 0;
    if (!unpack(error)) return false;
    if (size_ < sizeof(trace::FileHeader)) {
      *error = fmt::format("not a cuprobe trace: it unpacks to {} bytes, shorter than the {}-byte header", size_,
                           sizeof(trace::FileHeader));
      return false;
    }
    return true;
  }
  if (size_ < sizeof(trace::FileHeader)) {
    ::close(fd);
    *error = fmt::format("not a cuprobe trace: {} bytes, shorter than the {}-byte header", size_, sizeof(trace::FileHeader));
    return false;
  }
  void* p = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) {
    *error = fmt::format("cannot map: {}", std::strerror(errno));
    return false;
  }
  base_ = static_cast<const char*>(p);
  guard_slot_ = guard_mapping(base_, size_);
  return true;
}

// The header's magic, version and layout.
bool TraceFile::check_header(const trace::FileHeader& hdr, std::string* error) {
  if (std::memcmp(hdr.magic, trace::kMagic, sizeof hdr.magic) != 0) {
    *error = "not a cuprobe trace (bad magic)";
    return false;
  }
  if (hdr.version != trace::kVersion) {
    *error = hdr.version < trace::kVersion
                 ? fmt::format("trace format version {} was written by an older cuprobe; this one reads version {} "
                               "(problems and algorithm results became typed records). Read it with the cuprobe that "
                               "recorded it; `cuprobe dump` of that version writes JSON Lines this one reads",
                               hdr.version, trace::kVersion)
                 : fmt::format("trace format version {} was written by a newer cuprobe; this one reads version {}",
                               hdr.version, trace::kVersion);
    return false;
  }
  if (hdr.header_size != trace::kFileHeaderSize || hdr.chunk_size != trace::kChunkSize) {
    *error = fmt::format("unexpected layout (header {} bytes, chunks {} bytes)", hdr.header_size, hdr.chunk_size);
    return false;
  }
  return true;
}

// The claimed chunks the file holds (a shorter file is noted), from the header.
uint64_t TraceFile::claimed_in_file(const trace::FileHeader& hdr, uint64_t in_file) {
  uint64_t claimed = hdr.chunks_claimed;
  if (claimed > in_file) {
    note(fmt::format("the header claims {} chunks but the file holds {}; the file was truncated or its growth failed",
                     claimed, in_file));
    // A claim whose growth failed is counted by the shim (and its calls as dropped); any other
    // difference is a file cut short or a damaged header.
    if (claimed - in_file > stats_[trace::kStatGrowFailures]) {
      inconsistent(fmt::format("the header claims {} chunks, the file holds {}", claimed, in_file));
    }
    claimed = in_file;
  }
  return claimed;
}

void TraceFile::set_time_bounds(const trace::FileHeader& hdr, uint64_t claimed) {
  // Where calls can be in time: from the shim's start to its end (or, for a trace that was
  // never finalized, the latest of the chunks' anchors and the file's last modification), with
  // an hour's margin (or the span again) either side of the end. A call outside cannot be part
  // of the recording; a damaged record that would stretch the run to years is left out.
  double tpn = hdr.ticks_per_ns > 0 && std::isfinite(hdr.ticks_per_ns) && hdr.clock_kind != uint32_t(trace::ClockKind::kMonotonicNs)
                   ? hdr.ticks_per_ns
                   : 1.0;
  auto ticks_for = [&](double ns) { return ns * tpn >= 1.8e19 ? UINT64_MAX : uint64_t(ns * tpn); };
  uint64_t start_ticks = hdr.start.ticks;
  uint64_t end_ticks = 0;
  if (trace::finalized(state_) && hdr.end.ticks > start_ticks) {
    end_ticks = hdr.end.ticks;
  } else {
    for (uint32_t i = 0; i < claimed; ++i) {
      auto* c = reinterpret_cast<const trace::ChunkHeader*>(base_ + trace::kFileHeaderSize + size_t(i) * chunk_size_);
      if (c->magic == trace::kChunkMagic && c->anchor_ticks > end_ticks) end_ticks = c->anchor_ticks;
    }
    if (mtime_ns_ > hdr.start.real_ns && hdr.start.real_ns != 0) {
      uint64_t since = ticks_for(double(mtime_ns_ - hdr.start.real_ns));
      if (start_ticks + since >= start_ticks) end_ticks = std::max(end_ticks, start_ticks + since);
    }
  }
  if (start_ticks != 0 && end_ticks > start_ticks) {
    uint64_t margin = std::max(ticks_for(3600e9), end_ticks - start_ticks);
    lo_ticks_ = start_ticks > ticks_for(60e9) ? start_ticks - ticks_for(60e9) : 0;
    hi_ticks_ = end_ticks + margin < end_ticks ? UINT64_MAX : end_ticks + margin;
  }
}

void TraceFile::read_chunks(const trace::FileHeader& hdr, uint64_t claimed, uint64_t in_file,
                            std::vector<std::pair<uint64_t, uint64_t>>& anchors) {
  calls_per_api_.assign(size_t(UINT16_MAX) + 1, 0);
  recycled_ = (hdr.features & trace::kFeatureFlightRecorder) && hdr.ring.recycled_chunks != 0;
  for (uint32_t i = 0; i < claimed; ++i) read_claimed_chunk(i, i + 1 == claimed, anchors);
  // The shim grows the file ahead of its claims, so chunks past the claimed count are blank; one
  // that holds records of a process that has ended means the header's count is what is damaged.
  if (state_ == trace::FileState::kExited) {
    for (uint64_t i = claimed; i < in_file; ++i) {
      auto* c = reinterpret_cast<const trace::ChunkHeader*>(base_ + trace::kFileHeaderSize + size_t(i) * chunk_size_);
      if (c->magic != trace::kChunkMagic) continue;
      inconsistent(fmt::format("chunk {} holds records but lies past the {} chunks the header claims (read anyway)", i,
                               claimed));
      scan_chunk(uint32_t(i), c, anchors);
    }
  }
}

// Calls at impossible times are left out, unless most are: then the header's times are wrong.
void TraceFile::settle_out_of_range() {
  // When most calls fall outside, the header's own times are what is damaged: keep every call.
  if (out_of_range_ > 0 && out_of_range_ * 2 > call_records_) {
    note(fmt::format("the header's start and end times do not fit {} of the {} calls; times may be wrong", out_of_range_,
                     call_records_));
    lo_ticks_ = 0;
    hi_ticks_ = UINT64_MAX;
    out_of_range_ = 0;
    last_ticks_ = last_ticks_any_;
  } else if (out_of_range_ > 0) {
    note(fmt::format("{} call{} with a time outside the recording (the first in chunk {} at offset {}, at {} ticks) "
                     "left out: the record is damaged",
                     out_of_range_, out_of_range_ == 1 ? "" : "s", first_out_of_range_.first,
                     first_out_of_range_.second, first_out_of_range_ticks_));
    damaged_records_ += out_of_range_;
    ignored_events_ = out_of_range_;
  }
}

// What needed the whole file read: Python frames' strings, fault counts, the clock, crashes,
// pins and cuDNN handles.
void TraceFile::resolve_after_scan(const trace::FileHeader& hdr, std::vector<std::pair<uint64_t, uint64_t>> anchors) {
  // Python frames name their file and function by string ids, known once every chunk was read.
  for (const auto& [id, f] : raw_python_) {
    stacks_[id].python.push_back(PyFrame{string(StringId(f.file)), string(StringId(f.function)), f.line});
  }
  raw_python_.clear();
  for (uint32_t id : raw_env_) {
    const std::string& text = string(StringId(id));
    size_t eq = text.find('=');
    if (eq != std::string::npos && eq > 0) process_.environment[text.substr(0, eq)] = text.substr(eq + 1);
  }
  raw_env_.clear();
  for (uint32_t id : raw_versions_) {
    const std::string& text = string(StringId(id));
    size_t eq = text.find('=');
    if (eq != std::string::npos && eq > 0) process_.library_versions[text.substr(0, eq)] = text.substr(eq + 1);
  }
  raw_versions_.clear();
  std::sort(modules_.begin(), modules_.end(), [](const Module& a, const Module& b) { return a.start < b.start; });
  for (FaultRule& fr : fault_rules_) {
    fr.matched = hdr.fault_matched[fr.index];
    fr.injected = hdr.fault_injected[fr.index];
  }
  clock_.init(trace::ClockKind(hdr.clock_kind), hdr.ticks_per_ns, std::move(anchors));
  if (call_records_ > 0) last_event_ns_ = clock_.to_ns(last_ticks_);
  read_coverage(hdr);
  for (const auto& [tid, rec] : raw_crashes_) {
    Crash c;
    c.signal = rec->signal;
    c.tid = tid;
    c.ts_ns = clock_.to_ns(rec->ticks);
    if (rec->api_in_flight != trace::kNoApi) {
      c.api_in_flight = api_name(rec->api_in_flight);
      c.in_flight_start_ns = clock_.to_ns(rec->in_flight_start_ticks);
    }
    crashes_.push_back(c);
  }
  raw_crashes_.clear();
  for (const auto& [tid, r] : raw_pins_) {
    const trace::PinRecord* rec = &r;
    PinEvent p;
    p.tid = tid;
    p.ts_ns = clock_.to_ns(rec->ticks);
    p.outcome = rec->outcome > 0 && rec->outcome < uint32_t(trace::PinOutcome::kCount) ? trace::PinOutcome(rec->outcome)
                                                                                      : trace::PinOutcome::kNotOffered;
    p.problem = ProblemId(rec->problem);
    p.problem_hash = rec->problem_hash;
    p.engine = rec->engine;
    p.knobs = KnobsId(rec->knobs);
    p.legacy = (rec->flags & trace::kPinLegacy) != 0;
    p.answered = (rec->flags & trace::kPinHeuristicsAnswered) != 0;
    p.pinned_ms = rec->pinned_ms;
    p.search_ms = rec->search_ms;
    p.replaced_ms = rec->replaced_ms;
    p.moved = (rec->flags & trace::kPinMoved) != 0;
    p.no_fallback = (rec->flags & trace::kPinNoFallback) != 0;
    pins_.push_back(p);
  }
  raw_pins_.clear();
  std::sort(pins_.begin(), pins_.end(), [](const PinEvent& a, const PinEvent& b) { return a.ts_ns < b.ts_ns; });
  for (const auto& [tid, r] : maybe_handles_) {
    if (r->h.aux < apis_.size() && (apis_[r->h.aux].flags & trace::kApiHandleCreate)) note_handle(tid, r);
  }
  maybe_handles_.clear();
}

void TraceFile::note_unusable_calls() {
  // Calls of an API the trace does not describe: kept (dump shows them as "unknown"), but the
  // analysis cannot know what they are.
  uint64_t unknown = 0, unknown_ids = 0;
  uint32_t first_unknown = 0;
  for (size_t id = 0; id < calls_per_api_.size(); ++id) {
    if (calls_per_api_[id] == 0 || api(uint16_t(id)) != nullptr) continue;
    if (unknown_ids++ == 0) first_unknown = uint32_t(id);
    unknown += calls_per_api_[id];
  }
  calls_per_api_ = {};
  if (unknown > 0) {
    note(fmt::format("{} call{} of {} API id{} the trace has no API-info record for (the first: id {}): shown as "
                     "\"unknown\", without arguments, and left out of the analysis",
                     unknown, unknown == 1 ? "" : "s", unknown_ids, unknown_ids == 1 ? "" : "s", first_unknown));
    damaged_records_ += unknown;
  }
  // A call never holds more arguments than its API has fields (it may hold fewer: a call whose
  // real function was missing holds none). More means its size was damaged, and the records it
  // swallowed are lost with it: such calls are left out.
  for (size_t id = 0; id < arg_counts_.size(); ++id) {
    const Api* a = api(uint16_t(id));
    if (a == nullptr) continue;
    uint64_t longer = 0;
    for (size_t n = a->fields.size() + 1; n < arg_counts_[id].size(); ++n) longer += arg_counts_[id][n];
    if (longer == 0) continue;
    note(fmt::format("{} call{} of {} hold{} more than its {} argument{}: the record size is damaged (and the records "
                     "after it may be lost inside it); left out",
                     longer, longer == 1 ? "" : "s", a->name, longer == 1 ? "s" : "", a->fields.size(),
                     a->fields.size() == 1 ? "" : "s"));
    if (integrity_.resyncs++ == 0) integrity_.first_resync = fmt::format("calls of {}", a->name);
    damaged_records_ += longer;
    ignored_events_ += longer;
  }
  arg_counts_ = {};
  for (const auto& [what, d] : damage_) {
    note(fmt::format("{} {} (the first in chunk {} at offset {}): left out", d.count, what, d.chunk, d.off));
    damaged_records_ += d.count;
  }
  damage_.clear();
}

void TraceFile::merge_counts() {
  // Counts were gathered by slot; name them by API and merge the chunks of each thread.
  std::map<std::tuple<uint32_t, uint16_t, int>, uint64_t> merged;
  for (const RawCount& c : raw_counts_) {
    for (size_t id = 0; id < apis_.size(); ++id) {
      if ((apis_[id].flags & c.cls) && apis_[id].count_slot == c.slot) {
        merged[{c.tid, uint16_t(id), c.device}] += c.calls;
        break;
      }
    }
  }
  raw_counts_.clear();
  for (const auto& [key, n] : merged) counts_.push_back(Count{std::get<0>(key), std::get<1>(key), std::get<2>(key), n});
}

bool TraceFile::load(std::string* error) {
  if (!map_file(error)) return false;
  trace::FileHeader hdr;
  std::memcpy(&hdr, base_, sizeof hdr);
  if (!check_header(hdr, error)) return false;
  pid_ = hdr.pid;
  state_ = hdr.state <= uint32_t(trace::FileState::kSnapshot) ? trace::FileState(hdr.state) : trace::FileState::kRecording;
  end_signal_ = hdr.end_signal;
  std::memcpy(stats_, hdr.stats, sizeof stats_);
  start_mono_ns_ = hdr.start.mono_ns;
  start_real_ns_ = hdr.start.real_ns;
  std::vector<std::pair<uint64_t, uint64_t>> anchors;
  anchors.emplace_back(hdr.start.ticks, hdr.start.mono_ns);
  if (trace::finalized(state_)) {
    end_mono_ns_ = hdr.end.mono_ns;
    if (hdr.end.ticks != 0) anchors.emplace_back(hdr.end.ticks, hdr.end.mono_ns);
  }

  uint64_t in_file = size_ > trace::kFileHeaderSize ? (size_ - trace::kFileHeaderSize) / chunk_size_ : 0;
  uint64_t claimed = claimed_in_file(hdr, in_file);
  set_time_bounds(hdr, claimed);
  read_chunks(hdr, claimed, in_file, anchors);
  settle_out_of_range();
  anchors.erase(std::remove_if(anchors.begin(), anchors.end(),
                               [&](const auto& a) { return a.first < lo_ticks_ || a.first > hi_ticks_; }),
                anchors.end());
  for (auto& [tid, t] : threads_) {
    std::sort(t.chunks.begin(), t.chunks.end(), [](const ChunkRef& a, const ChunkRef& b) { return a.seq < b.seq; });
  }
  if (!recycled_) check_chunk_order();
  {
    std::set<uint32_t> tids;
    for (const auto& [key, t] : threads_) {
      if (key != trace::kMetaTid) tids.insert(t.tid);
    }
    thread_count_ = tids.size();
  }
  resolve_after_scan(hdr, std::move(anchors));
  note_unusable_calls();
  check_unchanged("while it was opened");
  merge_counts();
  if (!has_process_) note("the process record is missing; the trace was cut short while it was being created");
  release_events();  // many traces may be open at once; each pass maps its calls in again
  return true;
}


void TraceFile::read_coverage(const trace::FileHeader& hdr) {
  const trace::RingInfo& r = hdr.ring;
  Coverage& c = coverage_;
  c.keep = r.keep_mode <= uint32_t(trace::KeepMode::kAuto) ? trace::KeepMode(r.keep_mode) : trace::KeepMode::kAll;
  if (hdr.features & trace::kFeatureFlightRecorder) {
    c.ring_bytes = r.ring_bytes;
    c.ring_started_ns = r.started_ticks ? clock_.to_ns(r.started_ticks) : 0;
    c.recycled_chunks = r.recycled_chunks;
    c.overwritten_records = r.overwritten_records;
    c.overwritten_calls = r.overwritten_calls;
    c.overwritten_counted = r.overwritten_counted;
    if (r.overwritten_first_ticks) c.overwritten_first_ns = clock_.to_ns(r.overwritten_first_ticks);
    if (r.overwritten_last_ticks) c.overwritten_last_ns = clock_.to_ns(r.overwritten_last_ticks);
  }
  if (hdr.features & trace::kFeatureCaptureWindow) {
    c.window = true;
    c.window_lo_ns = r.window_lo_ticks == 0 ? 0 : clock_.to_ns(r.window_lo_ticks);
    c.window_hi_ns = r.window_hi_ticks == UINT64_MAX ? UINT64_MAX : clock_.to_ns(r.window_hi_ticks);
    c.outside_window_calls = r.outside_window_calls;
    if (r.window_marker != 0) c.window_marker = string(StringId(r.window_marker));
    c.window_marker_opens = r.window_marker_opens;
  }
}

void TraceFile::damaged(const char* what, uint32_t chunk, uint32_t off) {
  Damage& d = damage_[what];
  if (d.count++ == 0) {
    d.chunk = chunk;
    d.off = off;
  }
}

void TraceFile::skipped_chunk(uint32_t index, const std::string& why) {
  if (integrity_.skipped_chunks++ == 0) integrity_.first_chunk = fmt::format("chunk {}: {}", index, why);
  note(fmt::format("chunk {}: {}", index, why));
}

void TraceFile::inconsistent(const std::string& where) {
  if (integrity_.inconsistent++ == 0) integrity_.first_inconsistent = where;
  note(where);
}

namespace {

bool blank(const char* p, size_t n) {
  for (size_t i = 0; i < n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    if (w != 0) return false;
  }
  return true;
}

// Whether the bytes at `pos` can start a record of a known type that fits before `used`.
// Records start on 8-byte boundaries: a position that does not (after a damaged used size) starts
// none, and is never read as a header (which would be a misaligned access).
uint32_t plausible_size(const char* data, uint32_t pos, uint32_t used) {
  if (pos % 8 != 0) return 0;
  auto* h = reinterpret_cast<const trace::RecordHeader*>(data + pos);
  uint32_t size = h->size;
  if (h->type == 0 || h->type > uint8_t(trace::RecordType::kPin)) return 0;
  if (size < sizeof(trace::RecordHeader) || size % 8 != 0 || size > used - pos) return 0;
  if (h->type == uint8_t(trace::RecordType::kCall) && size < sizeof(trace::CallRecord)) return 0;
  return size;
}

}  // namespace

// After a record that cannot be read at `from`: the first later offset from which records of known
// types chain exactly to the chunk's end (a chunk's records always end at its used size), or
// `used` when there is none. One backward pass over the rest of the chunk.
uint32_t TraceFile::resync(const char* data, uint32_t from, uint32_t used) const {
  if (used <= from || (used - from) % 8 != 0) return used;
  const uint32_t words = (used - from) / 8;
  std::vector<uint8_t> ends(words + 1, 0);  // ends[k]: records chain from from + 8k to used
  ends[words] = 1;
  for (uint32_t k = words; k-- > 1;) {
    uint32_t pos = from + 8 * k;
    if (uint32_t size = plausible_size(data, pos, used)) ends[k] = ends[k + size / 8];
  }
  for (uint32_t k = 1; k < words; ++k) {
    if (ends[k]) return from + 8 * k;
  }
  return used;
}

// A claimed chunk: read when its magic says it was initialized. A blank one was claimed and never
// used (its thread or the process ended first): nothing was lost. Anything else is a damaged
// header: its records are read anyway when they chain exactly to its used size, else skipped.
void TraceFile::read_claimed_chunk(uint32_t index, bool last, std::vector<std::pair<uint64_t, uint64_t>>& anchors) {
  auto* c = reinterpret_cast<const trace::ChunkHeader*>(base_ + trace::kFileHeaderSize + size_t(index) * chunk_size_);
  if (c->magic == trace::kChunkMagic) {
    scan_chunk(index, c, anchors);
    return;
  }
  const char* data = reinterpret_cast<const char*>(c) + trace::kChunkHeaderSize;
  if (blank(reinterpret_cast<const char*>(c), chunk_size_)) {
    if (!last) note(fmt::format("chunk {} was claimed but never initialized; skipped", index));
    return;
  }
  // A chunk being set up or recycled when a process was killed has magic 0 for a moment.
  if (c->magic == 0 && state_ != trace::FileState::kExited && c->used == 0) return;
  uint32_t used = c->used;
  bool chains = used > 0 && used <= trace::kChunkDataSize;
  for (uint32_t off = 0; chains && off < used;) {
    uint32_t size = plausible_size(data, off, used);
    chains = size != 0;
    off += size;
  }
  if (chains) {
    inconsistent(fmt::format("chunk {}: its header is damaged (magic {:#010x}, expected {:#010x}); its records were "
                             "read anyway, as thread {}'s",
                             index, c->magic, trace::kChunkMagic, c->tid & ~trace::kKeptStreamBit));
    scan_chunk(index, c, anchors);
    return;
  }
  skipped_chunk(index, fmt::format("its header is damaged (magic {:#010x}, expected {:#010x}) and its records cannot "
                                   "be read: up to {} KiB of the {} skipped{}",
                                   c->magic, trace::kChunkMagic, trace::kChunkDataSize / 1024,
                                   last ? "process's last records" : "process's records",
                                   last && state_ == trace::FileState::kExited ? ", although the process exited cleanly"
                                                                                : ""));
}

// Without a ring that recycles chunks, each thread's chunks are numbered 0, 1, 2... and begin
// later and later. A thread id the system gave again to a new thread numbers from 0 again: then
// the numbers repeat and nothing is concluded.
void TraceFile::check_chunk_order() {
  for (const auto& entry : threads_) {
    const uint32_t key = entry.first;
    const auto& t = entry.second;  // a plain reference: clang before 16 cannot capture a structured binding
    auto header = [&](size_t k) {
      return reinterpret_cast<const trace::ChunkHeader*>(base_ + trace::kFileHeaderSize +
                                                         size_t(t.chunks[k].index) * chunk_size_);
    };
    const char* stream = (key & trace::kKeptStreamBit) && key != trace::kMetaTid ? "'s kept stream" : "";
    std::string who = key == trace::kMetaTid ? "the process-wide records" : fmt::format("thread {}{}", t.tid, stream);
    bool repeats = false;
    for (size_t k = 1; k < t.chunks.size(); ++k) {
      if (t.chunks[k].seq != t.chunks[k - 1].seq) continue;
      repeats = true;
      // A reused thread id starts at 0 again, later; the same start twice is a copied chunk.
      if (header(k)->anchor_ticks == header(k - 1)->anchor_ticks &&
          header(k)->anchor_mono_ns == header(k - 1)->anchor_mono_ns) {
        inconsistent(fmt::format("{}: chunks {} and {} are the same chunk (number {}, same start): one was copied over "
                                 "another, whose records are lost",
                                 who, t.chunks[k - 1].index, t.chunks[k].index, t.chunks[k].seq));
        break;
      }
    }
    if (repeats || t.chunks.empty()) continue;
    if (t.chunks.back().seq + 1 != t.chunks.size()) {
      inconsistent(fmt::format("{}: {} chunk{} numbered up to {}: {} missing or misnumbered", who, t.chunks.size(),
                               t.chunks.size() == 1 ? "" : "s", t.chunks.back().seq,
                               t.chunks.back().seq + 1 > t.chunks.size() ? "some are" : "they are"));
      continue;
    }
    for (size_t k = 1; k < t.chunks.size(); ++k) {
      if (header(k)->anchor_ticks < header(k - 1)->anchor_ticks) {
        inconsistent(fmt::format("{}: chunk {} (number {}) began before chunk {} (number {}): their order is damaged",
                                 who, t.chunks[k].index, t.chunks[k].seq, t.chunks[k - 1].index, t.chunks[k - 1].seq));
        break;
      }
    }
  }
}

bool TraceFile::in_range(const trace::CallRecord* r) const {
  uint64_t start = r->start_ticks;
  uint64_t dur = call_duration(r);
  return start >= lo_ticks_ && start <= hi_ticks_ && dur <= hi_ticks_ - start;
}

void TraceFile::read_call(const RecordAt& at) {
  if (at.size < sizeof(trace::CallRecord)) {
    damaged("call records too short", at.chunk, at.off);
    return;
  }
  ++call_records_;
  auto* r = reinterpret_cast<const trace::CallRecord*>(at.rec);
  uint64_t end = r->start_ticks + call_duration(r);
  if (end < r->start_ticks) end = UINT64_MAX;
  last_ticks_any_ = std::max(last_ticks_any_, end);
  if (!in_range(r)) {
    if (out_of_range_++ == 0) {
      first_out_of_range_ = {at.chunk, at.off};
      first_out_of_range_ticks_ = r->start_ticks;
    }
  } else {
    last_ticks_ = std::max(last_ticks_, end);
  }
  ++calls_per_api_[at.h->aux];
  if (arg_counts_.size() <= at.h->aux) arg_counts_.resize(size_t(at.h->aux) + 1);
  arg_counts_[at.h->aux][std::min<uint32_t>(tail_words(r) - std::min(optional_words(r), tail_words(r)),
                                            trace::kMaxCallArgs + 1)]++;
  if (at.h->aux >= apis_.size() || apis_[at.h->aux].name.empty()) {
    maybe_handles_.emplace_back(at.tid, r);
  } else if (apis_[at.h->aux].flags & trace::kApiHandleCreate) {
    note_handle(at.tid, r);
  }
}

void TraceFile::read_api_info(const RecordAt& at) {
  auto* r = reinterpret_cast<const trace::ApiInfo*>(at.rec);
  if (!at.fits(sizeof(trace::ApiInfo), at.size < sizeof(trace::ApiInfo) ? 0 : uint64_t(r->name_len) + r->fields_len) ||
      r->name_len == 0) {
    damaged("API-info records with bad lengths (calls of those APIs show as \"unknown\")", at.chunk, at.off);
    return;
  }
  if (apis_.size() <= at.h->aux) apis_.resize(size_t(at.h->aux) + 1);
  Api& a = apis_[at.h->aux];
  const char* t = r->text;
  a.name = take(t, r->name_len);
  a.fields = parse_fields(take(t, r->fields_len));
  if (a.fields.size() > size_t(trace::kMaxCallArgs)) a.fields.resize(size_t(trace::kMaxCallArgs));
  a.library = trace::Library(r->library);
  a.flags = r->flags;
  // Roles a later cuprobe gave to APIs this file already recorded (trace_format.h).
  if (const ApiStatic* known = api_by_name(a.name.c_str())) a.flags |= known->flags & trace::kApiLaterRoleFlags;
  a.count_slot = r->count_slot;
}

void TraceFile::read_process_info(const RecordAt& at) {
  auto* r = reinterpret_cast<const trace::ProcessInfo*>(at.rec);
  if (!at.fits(sizeof(trace::ProcessInfo),
               at.size < sizeof(trace::ProcessInfo)
                   ? 0
                   : uint64_t(r->hostname_len) + r->cmdline_len + r->exe_len + r->cwd_len)) {
    damaged("process records with bad lengths", at.chunk, at.off);
    return;
  }
  has_process_ = true;
  process_.pid = r->pid;
  process_.ppid = r->ppid;
  process_.rank = r->rank;
  process_.local_rank = r->local_rank;
  process_.world_size = r->world_size;
  process_.uid = r->uid;
  const char* t = r->text;
  process_.hostname = take(t, r->hostname_len);
  std::string cmd = take(t, r->cmdline_len);
  process_.cmdline.clear();
  size_t start = 0;
  while (start < cmd.size()) {
    size_t end = cmd.find('\0', start);
    if (end == std::string::npos) end = cmd.size();
    process_.cmdline.push_back(cmd.substr(start, end - start));
    start = end + 1;
  }
  process_.exe = take(t, r->exe_len);
  process_.cwd = take(t, r->cwd_len);
}

void TraceFile::read_problem(const RecordAt& at) {
  auto* r = reinterpret_cast<const trace::ProblemRecordHead*>(at.rec);
  trace::ProblemDesc d{};
  if (at.size < sizeof *r || r->id == 0 || r->id > (1u << 24) ||
      !trace::unpack_problem(at.rec + sizeof *r, uint32_t(at.size - sizeof *r), &d) ||
      trace::align8(uint32_t(sizeof *r + trace::packed_problem_size(d))) != at.size) {
    damaged("problem records with bad lengths (calls of those problems show no problem)", at.chunk, at.off);
    return;
  }
  if (problems_.size() <= r->id) problems_.resize(size_t(r->id) + 1);
  Problem& p = problems_[r->id];
  p.id = r->id;
  p.hash = r->hash;
  p.typed = true;
  p.desc = d;
  char text[2048];
  size_t len = render_problem(d, text, sizeof text);
  p.text.assign(text, std::min(len, sizeof text - 1));
}

void TraceFile::read_knobs(const RecordAt& at) {
  auto* r = reinterpret_cast<const trace::KnobsRecord*>(at.rec);
  if (at.size < sizeof(trace::KnobsRecord) || r->n > uint32_t(trace::kMaxKnobsPerSet) ||
      sizeof(trace::KnobsRecord) + r->n * sizeof(trace::Knob) != at.size || r->id == 0) {
    damaged("knob records with bad lengths", at.chunk, at.off);
    return;
  }
  KnobSet& k = knob_sets_[r->id];
  k.knobs.assign(r->knobs, r->knobs + r->n);
  char text[1024];
  size_t len = render_knobs(r->knobs, int(r->n), text, sizeof text);
  k.text.assign(text, std::min(len, sizeof text - 1));
}

void TraceFile::read_algo_results(const RecordAt& at) {
  auto* r = reinterpret_cast<const trace::AlgoResultsRecord*>(at.rec);
  if (at.size < sizeof(trace::AlgoResultsRecord) || r->n > uint32_t(trace::kMaxAlgoResults) ||
      sizeof(trace::AlgoResultsRecord) + r->n * sizeof(trace::AlgoResult) != at.size || r->id == 0) {
    damaged("algorithm result records with bad lengths", at.chunk, at.off);
    return;
  }
  algo_results_[r->id].assign(r->results, r->results + r->n);
}

void TraceFile::read_string(const RecordAt& at) {
  auto* r = reinterpret_cast<const trace::StringRecord*>(at.rec);
  if (!at.fits(sizeof(trace::StringRecord), at.size < sizeof(trace::StringRecord) ? 0 : r->len)) {
    damaged("string records with bad lengths", at.chunk, at.off);
    return;
  }
  strings_[r->id] = std::string(r->text, r->len);
}

void TraceFile::read_device_info(const RecordAt& at) {
  if (at.size != sizeof(trace::DeviceInfo)) {
    damaged("device records of the wrong size", at.chunk, at.off);
    return;
  }
  auto* r = reinterpret_cast<const trace::DeviceInfo*>(at.rec);
  if (r->index < 0 || r->index >= trace::kMaxDevices) {
    damaged("device records with an impossible device index", at.chunk, at.off);
    return;
  }
  Device d;
  d.index = r->index;
  d.name = std::string(r->name, strnlen(r->name, sizeof r->name));
  d.total_mem = r->total_mem;
  // What the driver did not answer is left out (all-zero UUID, negative PCI parts): the
  // shim writes unknowns, never guesses (shim/driver_queries.h).
  bool has_uuid = false;
  for (uint8_t b : r->uuid) has_uuid = has_uuid || b != 0;
  if (has_uuid) d.uuid = format_uuid(r->uuid);
  if (r->pci_domain >= 0 && r->pci_bus >= 0 && r->pci_device >= 0) {
    d.pci_bus_id = fmt::format("{:04x}:{:02x}:{:02x}.0", r->pci_domain, r->pci_bus, r->pci_device);
  }
  d.cc_major = r->cc_major;
  d.cc_minor = r->cc_minor;
  d.multiprocessors = r->multiprocessors;
  devices_[d.index] = d;
}

void TraceFile::read_property(const RecordAt& at) {
  if (at.size != sizeof(trace::PropertyRecord)) {
    damaged("property records of the wrong size", at.chunk, at.off);
    return;
  }
  auto* r = reinterpret_cast<const trace::PropertyRecord*>(at.rec);
  if (trace::Property(r->key) == trace::Property::kEnvironment) {
    // A string id, resolved once every chunk was read (resolve_after_scan).
    if (r->value > 0 && r->value <= UINT32_MAX && raw_env_.size() < trace::kMaxEnvRecords) {
      raw_env_.push_back(uint32_t(r->value));
    }
    return;
  }
  if (trace::Property(r->key) == trace::Property::kLibraryVersion) {
    if (r->value > 0 && r->value <= UINT32_MAX && raw_versions_.size() < 16)
      raw_versions_.push_back(uint32_t(r->value));
    return;
  }
  properties_[r->key] = r->value;
}

void TraceFile::read_fault_rule(const RecordAt& at) {
  auto* r = reinterpret_cast<const trace::FaultRuleRecord*>(at.rec);
  if (!at.fits(sizeof(trace::FaultRuleRecord),
               at.size < sizeof(trace::FaultRuleRecord) ? 0 : uint64_t(r->name_len) + r->text_len) ||
      r->index >= uint32_t(trace::kFaultRuleSlots)) {
    damaged("fault rule records with bad lengths", at.chunk, at.off);
    return;
  }
  FaultRule fr;
  fr.index = int(r->index);
  fr.scope = int(r->scope);
  fr.name.assign(r->text, r->name_len);
  fr.text.assign(r->text + r->name_len, r->text_len);
  fault_rules_.push_back(std::move(fr));
}

void TraceFile::read_stack(const RecordAt& at) {
  auto* r = reinterpret_cast<const trace::StackRecord*>(at.rec);
  if (!at.fits(sizeof(trace::StackRecord), at.size < sizeof(trace::StackRecord)
                                               ? 0
                                               : 8ull * r->n_native + sizeof(trace::PyFrame) * uint64_t(r->n_python))) {
    damaged("stack records with bad lengths", at.chunk, at.off);
    return;
  }
  Stack& st = stacks_[r->id];
  st.id = r->id;
  st.pcs.assign(r->pcs, r->pcs + r->n_native);
  auto* py = reinterpret_cast<const trace::PyFrame*>(r->pcs + r->n_native);
  for (int i = 0; i < r->n_python; ++i) raw_python_.push_back({r->id, py[i]});
}

void TraceFile::read_module(const RecordAt& at) {
  auto* r = reinterpret_cast<const trace::ModuleRecord*>(at.rec);
  if (!at.fits(sizeof(trace::ModuleRecord),
               at.size < sizeof(trace::ModuleRecord) ? 0 : uint64_t(r->path_len) + r->build_id_len)) {
    damaged("module records with bad lengths", at.chunk, at.off);
    return;
  }
  Module m;
  m.bias = r->bias;
  m.start = r->start;
  m.end = r->end;
  m.path.assign(r->text, r->path_len);
  for (uint32_t i = 0; i < r->build_id_len; ++i) m.build_id += fmt::format("{:02x}", uint8_t(r->text[r->path_len + i]));
  modules_.push_back(std::move(m));
}

void TraceFile::read_anchor(const RecordAt& at) {
  if (at.size != sizeof(trace::AnchorRecord)) {
    damaged("clock anchor records of the wrong size", at.chunk, at.off);
    return;
  }
  auto* r = reinterpret_cast<const trace::AnchorRecord*>(at.rec);
  at.anchors.emplace_back(r->ticks, r->mono_ns);
}

void TraceFile::read_pin(const RecordAt& at) {
  // Older traces wrote the record without replaced_ms.
  if (at.size != sizeof(trace::PinRecord) && at.size != trace::kPinRecordV1Size) {
    damaged("pin records of the wrong size", at.chunk, at.off);
    return;
  }
  trace::PinRecord r{};
  r.replaced_ms = -1;
  std::memcpy(&r, at.rec, at.size);
  raw_pins_.emplace_back(at.tid, r);
}

void TraceFile::read_crash(const RecordAt& at) {
  if (at.size != sizeof(trace::CrashRecord)) {
    damaged("crash records of the wrong size", at.chunk, at.off);
    return;
  }
  raw_crashes_.emplace_back(at.tid, reinterpret_cast<const trace::CrashRecord*>(at.rec));
}

void TraceFile::read_thread_end(const RecordAt& at) {
  if (at.size != sizeof(trace::ThreadEnd)) damaged("thread-end records of the wrong size", at.chunk, at.off);
}

// The reader of each record type, by RecordType (trace_format.h); nullptr: a type no writer uses.
const std::array<TraceFile::RecordReader, 17> TraceFile::kRecordReaders = {
    nullptr,
    &TraceFile::read_call,          // kCall
    &TraceFile::read_api_info,      // kApiInfo
    &TraceFile::read_process_info,  // kProcessInfo
    &TraceFile::read_string,        // kString
    &TraceFile::read_device_info,   // kDeviceInfo
    &TraceFile::read_thread_end,    // kThreadEnd
    &TraceFile::read_anchor,        // kAnchor
    &TraceFile::read_crash,         // kCrash
    &TraceFile::read_property,      // kProperty
    &TraceFile::read_fault_rule,    // kFaultRule
    &TraceFile::read_stack,         // kStack
    &TraceFile::read_module,        // kModule
    &TraceFile::read_problem,       // kProblem
    &TraceFile::read_knobs,         // kKnobs
    &TraceFile::read_algo_results,  // kAlgoResults
    &TraceFile::read_pin,           // kPin
};

// Every length is checked against the record before the bytes it names are read: a record is
// used whole or not at all, and each one left out is counted by kind (damaged()).
void TraceFile::scan_chunk(uint32_t index, const trace::ChunkHeader* c,
                           std::vector<std::pair<uint64_t, uint64_t>>& anchors) {
  uint32_t used = c->used;
  // A kept-stream chunk (flight recorder) belongs to its thread like the others; it is read as a
  // stream of its own (its own seq order) and merged by time with the thread's routine chunks.
  const uint32_t key = c->tid;
  const uint32_t tid = key == trace::kMetaTid ? key : key & ~trace::kKeptStreamBit;
  const char* data = reinterpret_cast<const char*>(c) + trace::kChunkHeaderSize;
  if (used > trace::kChunkDataSize) {
    // Read as far as records chain from the start (a fresh chunk is zeros after its last record).
    uint32_t end = 0;
    while (end + sizeof(trace::RecordHeader) <= trace::kChunkDataSize) {
      uint32_t size = plausible_size(data, end, trace::kChunkDataSize);
      if (size == 0) break;
      end += size;
    }
    inconsistent(fmt::format("chunk {} (thread {}): used size {} exceeds the chunk; read as far as its records go ({} "
                             "bytes)",
                             index, tid, used, end));
    used = end;
  } else if (!recycled_ && used + 2 * sizeof(trace::RecordHeader) <= trace::kChunkDataSize) {
    // Records after the used size: the size is what is damaged. A record being written when a
    // process ended is at most one; a call the shim reserved and did not commit (a quiet call)
    // leaves its arguments there but no header; a recycled chunk's old records are excluded
    // above. So: two records, or one of the process-wide records (written whole under a lock) of
    // a process that exited, or one call at a time inside the recording.
    uint32_t end = used, n = 0;
    while (n < 2 && end + sizeof(trace::RecordHeader) <= trace::kChunkDataSize) {
      uint32_t size = plausible_size(data, end, trace::kChunkDataSize);
      if (size == 0) break;
      end += size;
      ++n;
    }
    auto* first = reinterpret_cast<const trace::RecordHeader*>(data + used);
    bool one = n == 1 && ((key == trace::kMetaTid && state_ == trace::FileState::kExited) ||
                          (first->type == uint8_t(trace::RecordType::kCall) &&
                           in_range(reinterpret_cast<const trace::CallRecord*>(first))));
    if (n >= 2 || one) {
      inconsistent(fmt::format("chunk {} (thread {}): records continue past its used size {}: the size is damaged and "
                               "the records after it are not read",
                               index, tid, used));
    }
  }
  anchors.emplace_back(c->anchor_ticks, c->anchor_mono_ns);
  // Resolved against the API table once it is complete (after all chunks are scanned).
  for (int slot = 0; slot < trace::kCountSlots; ++slot) {
    for (int d = 0; d <= trace::kCountDevices; ++d) {
      uint64_t n = c->counts[slot][d];
      if (n != 0) raw_counts_.push_back(RawCount{tid, trace::kApiCounted, slot, d == trace::kCountDevices ? -1 : d, n});
    }
  }
  for (int slot = 0; slot < trace::kQuietSlots; ++slot) {
    if (uint64_t n = c->quiet_counts[slot]) raw_counts_.push_back(RawCount{tid, trace::kApiQuiet, slot, -1, n});
  }
  uint32_t off = 0;
  std::vector<std::pair<uint32_t, uint32_t>> skips;
  while (off + sizeof(trace::RecordHeader) <= used) {
    auto* h = reinterpret_cast<const trace::RecordHeader*>(data + off);
    if (h->size < sizeof(trace::RecordHeader) || h->size % 8 != 0 || h->size > used - off) {
      uint32_t next = resync(data, off, used);
      std::string what = next == used ? fmt::format("the rest of this chunk ({} bytes) is skipped", used - off)
                                      : fmt::format("{} bytes skipped to the next readable record at offset {}",
                                                    next - off, next);
      std::string where = fmt::format("chunk {} (thread {}) offset {}", index, tid, off);
      note(fmt::format("{}: invalid record size {}; {}", where, h->size, what));
      if (integrity_.resyncs++ == 0) integrity_.first_resync = where;
      integrity_.skipped_bytes += next - off;
      skips.emplace_back(off, next);
      off = next;
      continue;
    }
    const auto type = h->type;
    RecordAt at{data + off, h->size, index, off, tid, h, anchors};
    if (type < kRecordReaders.size() && kRecordReaders[type] != nullptr) {
      (this->*kRecordReaders[type])(at);
    } else {
      damaged("records of a type this cuprobe does not know (damaged, or written by a newer cuprobe)", index, off);
    }
    off += h->size;
  }
  Thread& t = threads_[key];
  t.tid = tid;
  t.key = key;
  t.chunks.push_back(ChunkRef{c->seq, index, off, std::move(skips)});
}

void TraceFile::note_handle(uint32_t tid, const trace::CallRecord* r) {
  if (r->ret != 0 || tail_words(r) == 0) return;
  handles_.push_back(CudnnHandle{r->tail[0], r->h.aux2, tid});
}

void TraceFile::for_each_event(const std::function<void(const Event&)>& fn) const {
  map_in();
  if (base_ == nullptr) return;  // a packed trace that could not be unpacked again (noted)
  struct Cursor {
    const Thread* thread;
    size_t chunk;
    uint32_t off;
    const trace::CallRecord* rec;
    uint64_t start_ticks;  // read once: the heap's order must not change under it
  };
  auto chunk_data = [&](uint32_t index) {
    return base_ + trace::kFileHeaderSize + size_t(index) * chunk_size_ + trace::kChunkHeaderSize;
  };
  // Advances to the next call record of the thread; false at its end.
  auto advance = [&](Cursor& c) {
    while (c.chunk < c.thread->chunks.size()) {
      const ChunkRef& ref = c.thread->chunks[c.chunk];
      const char* data = chunk_data(ref.index);
      while (c.off + sizeof(trace::RecordHeader) <= ref.valid_bytes) {
        if (!ref.skips.empty()) {
          auto skip = std::find_if(ref.skips.begin(), ref.skips.end(), [&](const auto& s) { return s.first == c.off; });
          if (skip != ref.skips.end()) {
            c.off = skip->second;
            continue;
          }
        }
        auto* h = reinterpret_cast<const trace::RecordHeader*>(data + c.off);
        // Checked again: the file may have changed since it was scanned.
        uint32_t size = h->size;
        if (size < sizeof(trace::RecordHeader) || size % 8 != 0 || size > ref.valid_bytes - c.off) break;
        c.off += size;
        if (h->type == uint8_t(trace::RecordType::kCall) && size >= sizeof(trace::CallRecord)) {
          auto* r = reinterpret_cast<const trace::CallRecord*>(h);
          if (!in_range(r)) continue;
          c.rec = r;
          c.start_ticks = r->start_ticks;
          return true;
        }
      }
      ++c.chunk;
      c.off = 0;
    }
    return false;
  };
  auto later = [](const Cursor& a, const Cursor& b) {
    if (a.start_ticks != b.start_ticks) return a.start_ticks > b.start_ticks;
    return a.thread->key > b.thread->key;
  };
  std::priority_queue<Cursor, std::vector<Cursor>, decltype(later)> heap(later);
  for (const auto& [tid, t] : threads_) {
    Cursor c{&t, 0, 0, nullptr, 0};
    if (advance(c)) heap.push(c);
  }
  Event e;
  e.pid = pid_;
  size_t segment = 0;
  while (!heap.empty()) {
    Cursor c = heap.top();
    heap.pop();
    const trace::CallRecord* r = c.rec;
    uint32_t words = tail_words(r);
    uint32_t optional = std::min(optional_words(r), words);
    e.api = r->h.aux;
    e.ret = r->ret;
    e.device = r->h.aux2;
    e.has_stream = (r->h.flags & trace::kCallHasStream) != 0 && words > 0;
    e.sample = (r->h.flags & trace::kCallSample) != 0;
    e.tid = c.thread->tid;
    clock_.convert(r->start_ticks, call_duration(r), &segment, &e.ts_ns, &e.dur_ns);
    e.nargs = int(words - optional);
    e.args = r->tail;
    e.stream = e.has_stream ? r->tail[e.nargs] : 0;
    e.fault_rule = -1;
    e.fault_k = 0;
    e.stack = StackId();
    uint32_t last = words;  // the optional words at the end: [fault][stack]
    if ((r->h.flags & trace::kCallHasStack) && last > 0) e.stack = StackId(uint32_t(r->tail[--last]));
    if ((r->h.flags & trace::kCallInjected) && last > 0) {
      uint64_t word = r->tail[--last];
      e.fault_rule = (word & 0xffff) == trace::kPinFaultRule ? Event::kPinnedRule : int(word & 0xffff);
      e.fault_k = word >> 16;
    }
    if (const Api* a = api(e.api)) {
      if (e.nargs > int(a->fields.size())) {  // a damaged size (counted when the file was opened)
        if (advance(c)) heap.push(c);
        continue;
      }
    } else {
      e.nargs = 0;  // no API-info record: the arguments cannot be named
    }
    fn(e);
    if (advance(c)) heap.push(c);
  }
  check_unchanged("while it was read");
}

const char* keep_name(trace::KeepMode mode) {
  switch (mode) {
    case trace::KeepMode::kLast: return "last";
    case trace::KeepMode::kAuto: return "auto";
    case trace::KeepMode::kAll: break;
  }
  return "all";
}

trace::KeepMode keep_from_name(const std::string& name) {
  return name == "last" ? trace::KeepMode::kLast : name == "auto" ? trace::KeepMode::kAuto : trace::KeepMode::kAll;
}

Result<std::vector<std::unique_ptr<Trace>>> open_all(const std::vector<std::string>& paths,
                                                     std::vector<std::string>* warnings) {
  std::vector<std::unique_ptr<Trace>> traces;
  for (const auto& path : paths) {
    std::vector<std::string> skipped;
    auto found = find_trace_files(path, &skipped);
    if (warnings) warnings->insert(warnings->end(), skipped.begin(), skipped.end());
    if (!found) return found.error();
    for (const auto& file : *found) {
      auto t = open_traces(file);
      if (!t) {
        if (warnings) warnings->push_back(t.error().message);
        continue;
      }
      for (auto& x : *t) traces.push_back(std::move(x));
    }
  }
  return traces;
}

Result<std::vector<std::string>> find_trace_files(const std::string& path, std::vector<std::string>* skipped) {
  if (path == "-") return std::vector<std::string>{path};
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Error{fmt::format("{}: no such file or directory", path)};
    return Error{fmt::format("{}: {}", path, std::strerror(errno))};
  }
  std::vector<std::string> files;
  if (S_ISDIR(st.st_mode)) {
    // A run directory holds *.cuprobe files (*.cuprobe.zst once packed), or facts files (*.facts,
    // cuprobe facts); a directory of `cuprobe dump` output, *.jsonl (*.jsonl.zst). Only regular files are read: a FIFO
    // would block, and a symbolic link could make another user's run directory show any file of theirs as a trace.
    std::error_code ec;
    std::vector<std::string> dumps;
    std::set<std::string> names;
    for (const auto& entry : fs::directory_iterator(path, ec)) names.insert(entry.path().filename().string());
    for (const auto& entry : fs::directory_iterator(path, ec)) {
      const std::string name = entry.path().filename().string();
      auto ends = [&](std::string_view suffix) {
        return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
      };
      bool trace_file = ends(".cuprobe") || ends(".cuprobe.zst") || ends(".facts");
      if (!trace_file && !ends(".jsonl") && !ends(".jsonl.zst")) continue;
      if (ends(".zst") && names.count(name.substr(0, name.size() - 4))) {
        // Both the file and its packed copy (a pack that was stopped before it removed the file).
        if (skipped) {
          skipped->push_back(fmt::format("{}: skipped: the packed copy of {}, which is read instead",
                                         entry.path().string(), name.substr(0, name.size() - 4)));
        }
        continue;
      }
      std::error_code sec;
      fs::file_status link = entry.symlink_status(sec);
      if (!sec && fs::is_symlink(link)) {
        if (skipped) {
          std::error_code rec;
          fs::path target = fs::read_symlink(entry.path(), rec);
          skipped->push_back(fmt::format("{}: skipped: a symbolic link{}; cuprobe reads only the files written into "
                                         "the run directory (name the file itself to read it)",
                                         entry.path().string(), rec ? "" : " to " + target.string()));
        }
        continue;
      }
      if (sec || !fs::is_regular_file(link)) {
        struct stat est {};
        const char* kind = ::lstat(entry.path().c_str(), &est) == 0 ? files::kind_of(est.st_mode) : "unreadable";
        if (skipped) skipped->push_back(fmt::format("{}: skipped: not a regular file ({})", entry.path().string(), kind));
        continue;
      }
      (trace_file ? files : dumps).push_back(entry.path().string());
    }
    if (ec) return Error{fmt::format("{}: cannot list: {}", path, ec.message())};
    if (files.empty()) files = std::move(dumps);
    if (files.empty()) {
      return Error{fmt::format(
          "{}: no trace files (*.cuprobe, *.cuprobe.zst, *.facts, or *.jsonl from cuprobe dump) in this directory; no "
          "traced process made a CUDA call, or the shim was not preloaded",
          path)};
    }
    std::sort(files.begin(), files.end());
  } else if (S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode)) {
    files.push_back(path);  // a pipe or FIFO is read as JSON Lines, without blocking for good
  } else {
    return Error{fmt::format("{}: not a regular file ({}); cuprobe reads trace files, run directories, or JSON Lines "
                             "from a pipe or standard input ('-': cuprobe dump ... | cuprobe analyze -)",
                             path, files::kind_of(st.st_mode))};
  }
  return files;
}

}  // namespace cuprobe::reader
