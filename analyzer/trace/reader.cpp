// Trace file reader; see reader.h.
#include "trace/reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <queue>
#include <tuple>

#include <fmt/format.h>

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
  }
  return nullptr;
}

const char* library_name(trace::Library lib) {
  switch (lib) {
    case trace::Library::kCudart: return "cudart";
    case trace::Library::kCudnn: return "cudnn";
    case trace::Library::kDriver: return "driver";
    case trace::Library::kTorch: return "torch";
  }
  return "unknown";
}

void Clock::init(trace::ClockKind kind, double hint, std::vector<std::pair<uint64_t, uint64_t>> anchors) {
  identity_ = kind == trace::ClockKind::kMonotonicNs;
  hint_ = hint > 0 ? hint : 1.0;
  std::sort(anchors.begin(), anchors.end());
  anchors_.clear();
  // Keep anchors at least 1 ms apart whose ticks and nanoseconds both increase: each pair is
  // read with a few tens of nanoseconds between its two halves, which would bend the line
  // between anchors that are close together.
  for (const auto& a : anchors) {
    if (a.first == 0 && a.second == 0) continue;
    if (!anchors_.empty() && (a.first <= anchors_.back().first || a.second < anchors_.back().second + 1000000)) continue;
    anchors_.push_back(a);
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

uint64_t Clock::to_ns(uint64_t ticks) const {
  if (identity_) return ticks;
  if (anchors_.empty()) return uint64_t(double(ticks) / hint_);
  double ns = at(ticks, segment_of(ticks));
  return ns <= 0 ? 0 : uint64_t(ns);
}

uint64_t Clock::duration_ns(uint64_t start, uint64_t dur) const {
  if (identity_) return dur;
  uint64_t a = to_ns(start);
  uint64_t b = to_ns(start + dur);
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
  uint64_t end = start + dur;
  double b = inside(end, *segment) ? at(end, *segment) : at(end, segment_of(end));
  *ts_ns = a <= 0 ? 0 : uint64_t(a);
  uint64_t e = b <= 0 ? 0 : uint64_t(b);
  *dur_ns = e > *ts_ns ? e - *ts_ns : 0;
}

Result<std::unique_ptr<TraceFile>> TraceFile::open(const std::string& path) {
  std::unique_ptr<TraceFile> f(new TraceFile());
  f->path_ = path;
  std::string error;
  if (!f->load(&error)) return Error{fmt::format("{}: {}", path, error)};
  return f;
}

// Maps every page in one call (MADV_POPULATE_READ, Linux 5.14) instead of a fault per page,
// which costs microseconds each on virtual machines; older kernels fault pages in as usual.
void TraceFile::map_in() const {
  constexpr int kMadvPopulateRead = 22;
  if (base_ != nullptr) madvise(const_cast<char*>(base_), size_, kMadvPopulateRead);
}

// The file is mapped read-only and private: dropped pages are read from the file again on access.
void TraceFile::release_events() const {
  if (base_ != nullptr) madvise(const_cast<char*>(base_), size_, MADV_DONTNEED);
}

TraceFile::~TraceFile() {
  if (base_ != nullptr) munmap(const_cast<char*>(base_), size_);
}

const std::string& Trace::api_name(uint16_t id) const {
  static const std::string kUnknown = "unknown";
  const Api* a = api(id);
  return a ? a->name : kUnknown;
}

const Stack* Trace::stack(uint32_t id) const {
  auto it = stacks_.find(id);
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

const std::string& Trace::string(uint32_t id) const {
  static const std::string kEmpty;
  auto it = strings_.find(id);
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

bool TraceFile::load(std::string* error) {
  int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
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
  size_ = size_t(st.st_size);
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
  trace::FileHeader hdr;
  std::memcpy(&hdr, base_, sizeof hdr);
  if (std::memcmp(hdr.magic, trace::kMagic, sizeof hdr.magic) != 0) {
    *error = "not a cuprobe trace (bad magic)";
    return false;
  }
  if (hdr.version != trace::kVersion) {
    *error = fmt::format("trace format version {} is not supported by this cuprobe (reads version {})", hdr.version,
                         trace::kVersion);
    return false;
  }
  if (hdr.header_size != trace::kFileHeaderSize || hdr.chunk_size != trace::kChunkSize) {
    *error = fmt::format("unexpected layout (header {} bytes, chunks {} bytes)", hdr.header_size, hdr.chunk_size);
    return false;
  }
  pid_ = hdr.pid;
  state_ = trace::FileState(hdr.state);
  end_signal_ = hdr.end_signal;
  std::memcpy(stats_, hdr.stats, sizeof stats_);
  start_mono_ns_ = hdr.start.mono_ns;
  start_real_ns_ = hdr.start.real_ns;
  std::vector<std::pair<uint64_t, uint64_t>> anchors;
  anchors.emplace_back(hdr.start.ticks, hdr.start.mono_ns);
  if (state_ != trace::FileState::kRecording) {
    end_mono_ns_ = hdr.end.mono_ns;
    if (hdr.end.ticks != 0) anchors.emplace_back(hdr.end.ticks, hdr.end.mono_ns);
  }

  uint64_t in_file = size_ > trace::kFileHeaderSize ? (size_ - trace::kFileHeaderSize) / chunk_size_ : 0;
  uint64_t claimed = hdr.chunks_claimed;
  if (claimed > in_file) {
    note(fmt::format("the header claims {} chunks but the file holds {}; the file was truncated or its growth failed",
                     claimed, in_file));
    claimed = in_file;
  }
  for (uint32_t i = 0; i < claimed; ++i) {
    auto* c = reinterpret_cast<const trace::ChunkHeader*>(base_ + trace::kFileHeaderSize + size_t(i) * chunk_size_);
    if (c->magic != trace::kChunkMagic) {
      if (i + 1 < claimed) note(fmt::format("chunk {} was claimed but never initialized; skipped", i));
      continue;
    }
    scan_chunk(i, c, anchors);
  }
  for (auto& [tid, t] : threads_) {
    std::sort(t.chunks.begin(), t.chunks.end(), [](const ChunkRef& a, const ChunkRef& b) { return a.seq < b.seq; });
  }
  thread_count_ = threads_.size() - threads_.count(trace::kMetaTid);
  // Python frames name their file and function by string ids, known once every chunk was read.
  for (const auto& [id, f] : raw_python_) {
    stacks_[id].python.push_back(PyFrame{string(f.file), string(f.function), f.line});
  }
  raw_python_.clear();
  std::sort(modules_.begin(), modules_.end(), [](const Module& a, const Module& b) { return a.start < b.start; });
  for (FaultRule& fr : fault_rules_) {
    fr.matched = hdr.fault_matched[fr.index];
    fr.injected = hdr.fault_injected[fr.index];
  }
  clock_.init(trace::ClockKind(hdr.clock_kind), hdr.ticks_per_ns, std::move(anchors));
  if (call_records_ > 0) last_event_ns_ = clock_.to_ns(last_ticks_);
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
  for (const auto& [tid, r] : maybe_handles_) {
    if (r->h.aux < apis_.size() && apis_[r->h.aux].name == "cudnnCreate") note_handle(tid, r);
  }
  maybe_handles_.clear();
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
  if (!has_process_) note("the process record is missing; the trace was cut short while it was being created");
  release_events();  // many traces may be open at once; each pass maps its calls in again
  return true;
}

void TraceFile::scan_chunk(uint32_t index, const trace::ChunkHeader* c,
                           std::vector<std::pair<uint64_t, uint64_t>>& anchors) {
  uint32_t used = c->used;
  if (used > trace::kChunkDataSize) {
    note(fmt::format("chunk {} (thread {}): used size {} exceeds the chunk; read as empty", index, c->tid, used));
    used = 0;
  }
  anchors.emplace_back(c->anchor_ticks, c->anchor_mono_ns);
  // Resolved against the API table once it is complete (after all chunks are scanned).
  for (int slot = 0; slot < trace::kCountSlots; ++slot) {
    for (int d = 0; d <= trace::kCountDevices; ++d) {
      uint64_t n = c->counts[slot][d];
      if (n != 0) raw_counts_.push_back(RawCount{c->tid, trace::kApiCounted, slot, d == trace::kCountDevices ? -1 : d, n});
    }
  }
  for (int slot = 0; slot < trace::kQuietSlots; ++slot) {
    if (uint64_t n = c->quiet_counts[slot]) raw_counts_.push_back(RawCount{c->tid, trace::kApiQuiet, slot, -1, n});
  }
  const char* data = reinterpret_cast<const char*>(c) + trace::kChunkHeaderSize;
  uint32_t off = 0;
  while (off + sizeof(trace::RecordHeader) <= used) {
    auto* h = reinterpret_cast<const trace::RecordHeader*>(data + off);
    if (h->size < sizeof(trace::RecordHeader) || h->size % 8 != 0 || h->size > used - off) {
      note(fmt::format("chunk {} (thread {}) offset {}: invalid record size {}; the rest of this chunk ({} bytes) is skipped",
                       index, c->tid, off, h->size, used - off));
      break;
    }
    const char* rec = data + off;
    switch (trace::RecordType(h->type)) {
      case trace::RecordType::kCall:
        if (h->size < sizeof(trace::CallRecord)) {
          note(fmt::format("chunk {} offset {}: call record too short", index, off));
        } else {
          ++call_records_;
          auto* r = reinterpret_cast<const trace::CallRecord*>(rec);
          last_ticks_ = std::max(last_ticks_, r->start_ticks + call_duration(r));
          if (h->aux >= apis_.size() || apis_[h->aux].name.empty()) {
            maybe_handles_.emplace_back(c->tid, r);
          } else if (apis_[h->aux].name == "cudnnCreate") {
            note_handle(c->tid, r);
          }
        }
        break;
      case trace::RecordType::kApiInfo: {
        auto* r = reinterpret_cast<const trace::ApiInfo*>(rec);
        if (sizeof(trace::ApiInfo) + r->name_len + r->fields_len > h->size) break;
        if (apis_.size() <= h->aux) apis_.resize(size_t(h->aux) + 1);
        Api& a = apis_[h->aux];
        const char* t = r->text;
        a.name = take(t, r->name_len);
        a.fields = parse_fields(take(t, r->fields_len));
        a.library = trace::Library(r->library);
        a.flags = r->flags;
        a.count_slot = r->count_slot;
        break;
      }
      case trace::RecordType::kProcessInfo: {
        auto* r = reinterpret_cast<const trace::ProcessInfo*>(rec);
        uint64_t text = uint64_t(r->hostname_len) + r->cmdline_len + r->exe_len + r->cwd_len;
        if (sizeof(trace::ProcessInfo) + text > h->size) break;
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
        break;
      }
      case trace::RecordType::kString: {
        auto* r = reinterpret_cast<const trace::StringRecord*>(rec);
        if (sizeof(trace::StringRecord) + r->len > h->size) break;
        strings_[r->id] = std::string(r->text, r->len);
        break;
      }
      case trace::RecordType::kDeviceInfo: {
        if (h->size < sizeof(trace::DeviceInfo)) break;
        auto* r = reinterpret_cast<const trace::DeviceInfo*>(rec);
        Device d;
        d.index = r->index;
        d.name = std::string(r->name, strnlen(r->name, sizeof r->name));
        d.total_mem = r->total_mem;
        d.uuid = format_uuid(r->uuid);
        d.pci_bus_id = fmt::format("{:04x}:{:02x}:{:02x}.0", r->pci_domain, r->pci_bus, r->pci_device);
        d.cc_major = r->cc_major;
        d.cc_minor = r->cc_minor;
        d.multiprocessors = r->multiprocessors;
        devices_[d.index] = d;
        break;
      }
      case trace::RecordType::kProperty: {
        if (h->size < sizeof(trace::PropertyRecord)) break;
        auto* r = reinterpret_cast<const trace::PropertyRecord*>(rec);
        properties_[r->key] = r->value;
        break;
      }
      case trace::RecordType::kFaultRule: {
        if (h->size < sizeof(trace::FaultRuleRecord)) break;
        auto* r = reinterpret_cast<const trace::FaultRuleRecord*>(rec);
        if (sizeof(trace::FaultRuleRecord) + uint64_t(r->name_len) + r->text_len > h->size ||
            r->index >= uint32_t(trace::kFaultRuleSlots)) {
          note(fmt::format("chunk {} offset {}: fault rule record with bad lengths", index, off));
          break;
        }
        FaultRule fr;
        fr.index = int(r->index);
        fr.scope = int(r->scope);
        fr.name.assign(r->text, r->name_len);
        fr.text.assign(r->text + r->name_len, r->text_len);
        fault_rules_.push_back(std::move(fr));
        break;
      }
      case trace::RecordType::kStack: {
        if (h->size < sizeof(trace::StackRecord)) break;
        auto* r = reinterpret_cast<const trace::StackRecord*>(rec);
        if (sizeof(trace::StackRecord) + 8ull * r->n_native + sizeof(trace::PyFrame) * r->n_python > h->size) {
          note(fmt::format("chunk {} offset {}: stack record with bad lengths", index, off));
          break;
        }
        Stack& st = stacks_[r->id];
        st.id = r->id;
        st.pcs.assign(r->pcs, r->pcs + r->n_native);
        auto* py = reinterpret_cast<const trace::PyFrame*>(r->pcs + r->n_native);
        for (int i = 0; i < r->n_python; ++i) raw_python_.push_back({r->id, py[i]});
        break;
      }
      case trace::RecordType::kModule: {
        if (h->size < sizeof(trace::ModuleRecord)) break;
        auto* r = reinterpret_cast<const trace::ModuleRecord*>(rec);
        if (sizeof(trace::ModuleRecord) + uint64_t(r->path_len) + r->build_id_len > h->size) break;
        Module m;
        m.bias = r->bias;
        m.start = r->start;
        m.end = r->end;
        m.path.assign(r->text, r->path_len);
        for (uint32_t i = 0; i < r->build_id_len; ++i) m.build_id += fmt::format("{:02x}", uint8_t(r->text[r->path_len + i]));
        modules_.push_back(std::move(m));
        break;
      }
      case trace::RecordType::kAnchor: {
        if (h->size < sizeof(trace::AnchorRecord)) break;
        auto* r = reinterpret_cast<const trace::AnchorRecord*>(rec);
        anchors.emplace_back(r->ticks, r->mono_ns);
        break;
      }
      case trace::RecordType::kCrash:
        if (h->size >= sizeof(trace::CrashRecord)) {
          raw_crashes_.emplace_back(c->tid, reinterpret_cast<const trace::CrashRecord*>(rec));
        }
        break;
      default:
        break;  // kThreadEnd and types from newer writers
    }
    off += h->size;
  }
  Thread& t = threads_[c->tid];
  t.tid = c->tid;
  t.chunks.push_back(ChunkRef{c->seq, index, off});
}

void TraceFile::note_handle(uint32_t tid, const trace::CallRecord* r) {
  if (r->ret != 0 || tail_words(r) == 0) return;
  handles_.push_back(CudnnHandle{r->tail[0], r->h.aux2, tid});
}

void TraceFile::for_each_event(const std::function<void(const Event&)>& fn) const {
  map_in();
  struct Cursor {
    const Thread* thread;
    size_t chunk;
    uint32_t off;
    const trace::CallRecord* rec;
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
        auto* h = reinterpret_cast<const trace::RecordHeader*>(data + c.off);
        c.off += h->size;
        if (h->type == uint16_t(trace::RecordType::kCall) && h->size >= sizeof(trace::CallRecord)) {
          c.rec = reinterpret_cast<const trace::CallRecord*>(h);
          return true;
        }
      }
      ++c.chunk;
      c.off = 0;
    }
    return false;
  };
  auto later = [](const Cursor& a, const Cursor& b) {
    if (a.rec->start_ticks != b.rec->start_ticks) return a.rec->start_ticks > b.rec->start_ticks;
    return a.thread->tid > b.thread->tid;
  };
  std::priority_queue<Cursor, std::vector<Cursor>, decltype(later)> heap(later);
  for (const auto& [tid, t] : threads_) {
    Cursor c{&t, 0, 0, nullptr};
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
    e.stack = 0;
    uint32_t last = words;  // the optional words at the end: [fault][stack]
    if ((r->h.flags & trace::kCallHasStack) && last > 0) e.stack = uint32_t(r->tail[--last]);
    if ((r->h.flags & trace::kCallInjected) && last > 0) {
      uint64_t word = r->tail[--last];
      e.fault_rule = int(word & 0xffff);
      e.fault_k = word >> 16;
    }
    if (const Api* a = api(e.api)) e.nargs = std::min(e.nargs, int(a->fields.size()));
    fn(e);
    if (advance(c)) heap.push(c);
  }
}

Result<std::vector<std::string>> find_trace_files(const std::string& path) {
  if (path == "-") return std::vector<std::string>{path};
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return Error{fmt::format("{}: no such file or directory", path)};
  std::vector<std::string> files;
  if (fs::is_directory(st)) {
    // A run directory holds *.cuprobe files; a directory of `cuprobe dump` output, *.jsonl.
    std::vector<std::string> dumps;
    for (const auto& entry : fs::directory_iterator(path, ec)) {
      if (!entry.is_regular_file()) continue;
      if (entry.path().extension() == ".cuprobe") files.push_back(entry.path().string());
      if (entry.path().extension() == ".jsonl") dumps.push_back(entry.path().string());
    }
    if (ec) return Error{fmt::format("{}: cannot list: {}", path, ec.message())};
    if (files.empty()) files = std::move(dumps);
    if (files.empty()) {
      return Error{fmt::format("{}: no trace files (*.cuprobe, or *.jsonl from cuprobe dump) in this directory; no "
                               "traced process made a CUDA call, or the shim was not preloaded",
                               path)};
    }
    std::sort(files.begin(), files.end());
  } else {
    files.push_back(path);
  }
  return files;
}

}  // namespace cuprobe::reader
