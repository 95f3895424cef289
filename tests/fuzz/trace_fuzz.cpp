// libFuzzer target: the binary trace reader (analyzer/trace/reader.h) and the analysis facts pass
// over what it reads. The input is a whole trace file; seeds are real traces (scripts/fuzz_seeds.sh).
// Any crash, sanitizer report, hang or runaway allocation is a bug in the reader or the facts:
// a trace is untrusted input (a killed job's, a truncated copy, a damaged disk).
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "analysis/facts.h"
#include "trace/reader.h"

namespace {

// The input lives in a memory file: the reader maps a path, and /proc/self/fd/N is one.
int input_fd() {
  static int fd = [] {
    int f = memfd_create("trace_fuzz", MFD_CLOEXEC);
    if (f < 0) {
      perror("trace_fuzz: memfd_create");
      std::abort();
    }
    return f;
  }();
  return fd;
}

bool write_input(const uint8_t* data, size_t size) {
  int fd = input_fd();
  if (ftruncate(fd, 0) != 0) return false;
  size_t done = 0;
  while (done < size) {
    ssize_t n = pwrite(fd, data + done, size - done, off_t(done));
    if (n <= 0) return false;
    done += size_t(n);
  }
  return true;
}

// Uses a value so that reading it cannot be optimized away.
volatile uint64_t g_sink;
void use(uint64_t v) { g_sink = g_sink + v; }
void use(const std::string& s) { use(s.size() + (s.empty() ? 0 : uint8_t(s.back()))); }

void touch_metadata(const cuprobe::reader::Trace& t) {
  using namespace cuprobe;
  use(t.pid());
  use(uint64_t(t.state()));
  use(t.start_ns() + t.end_ns() + t.last_event_ns() + t.call_records() + t.thread_count());
  use(t.wall_ns(t.last_event_ns()));
  for (uint32_t s = 0; s < trace::kStatCount; ++s) use(t.stat(trace::Stat(s)));
  const reader::Process& p = t.process();
  use(p.hostname);
  use(p.exe);
  use(p.cwd);
  for (const auto& a : p.cmdline) use(a);
  for (size_t id = 0; id < t.apis().size(); ++id) {
    const reader::Api& a = t.apis()[id];
    use(a.name);
    use(t.api_name(uint16_t(id)));
    use(uint64_t(a.flags) + uint64_t(a.count_slot) + uint64_t(a.library));
    use(reader::library_name(a.library));
    for (const auto& f : a.fields) use(f.name + f.type);
    if (!a.fields.empty()) use(uint64_t(a.field_index(a.fields.back().name)));
  }
  for (const auto& [index, d] : t.devices()) use(uint64_t(index) + d.total_mem + d.name.size() + d.uuid.size() + d.pci_bus_id.size());
  for (const auto& [key, value] : t.properties()) {
    const char* name = reader::property_name(key);
    use(uint64_t(value) + (name ? name[0] : 0));
  }
  for (const auto& c : t.crashes()) use(c.api_in_flight + std::to_string(c.signal + c.tid + c.ts_ns));
  for (const auto& c : t.counts()) use(t.api_name(c.api) + std::to_string(c.calls + c.tid + c.device));
  for (const auto& h : t.cudnn_handles()) use(h.handle + h.device + h.tid);
  for (const auto& r : t.fault_rules()) {
    use(r.name + r.text);
    use(r.matched + r.injected + r.is_mem_cap());
    const reader::FaultRule* same = t.fault_rule(r.index);
    use(same ? same->matched : 0);
  }
  for (const auto& [id, s] : t.stacks()) {
    const reader::Stack* same = t.stack(reader::StackId(id));
    use(same ? same->pcs.size() : 0);
    for (uint64_t pc : s.pcs) {
      const reader::Module* m = t.module_of(pc);
      use(m ? m->path : std::string());
    }
    for (const auto& r : s.resolved) use(r);
    for (const auto& f : s.python) use(f.file + f.function + std::to_string(f.line));
  }
  for (const auto& m : t.modules()) use(m.path + m.build_id + std::to_string(m.bias + m.start + m.end));
  for (const auto& d : t.diagnostics()) use(d);
  for (uint32_t id = 0; id < 64; ++id) use(t.string(reader::StringId(id)));
}

void touch_events(const cuprobe::reader::Trace& t) {
  t.for_each_event([&](const cuprobe::reader::Event& e) {
    const cuprobe::reader::Api* api = t.api(e.api);
    use(t.api_name(e.api));
    uint64_t args = 0;
    for (int i = 0; i < e.nargs; ++i) args += e.args[i];
    use(args + e.ts_ns + e.dur_ns + e.stream + uint64_t(e.ret) + uint64_t(e.device) + e.pid + e.tid + e.sample);
    // A field the API names is an argument the event has, or none.
    if (api != nullptr && int(api->fields.size()) <= e.nargs) {
      for (size_t i = 0; i < api->fields.size(); ++i) {
        if (api->fields[i].type == 's') use(t.string(cuprobe::reader::StringId(uint32_t(e.args[i]))));
      }
    }
    if (e.stack != 0) {
      const cuprobe::reader::Stack* s = t.stack(e.stack);
      use(s ? s->pcs.size() + s->python.size() : 0);
    }
    if (e.injected()) {
      const cuprobe::reader::FaultRule* r = t.fault_rule(e.fault_rule);
      use((r ? r->injected : 0) + e.fault_k);
    }
  });
  t.release_events();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (!write_input(data, size)) return 0;
  const std::string path = "/proc/self/fd/" + std::to_string(input_fd());
  auto opened = cuprobe::reader::TraceFile::open(path);
  if (!opened) {
    use(opened.error().message);
    return 0;
  }
  const cuprobe::reader::Trace& t = **opened;
  touch_metadata(t);
  touch_events(t);
  // The analysis's one pass over the calls, as `cuprobe analyze` makes it (no files written).
  cuprobe::analysis::ProcessFacts facts = cuprobe::analysis::gather_facts(t, cuprobe::analysis::FactOptions{});
  (void)facts;
  // A second pass reads the events again after release_events (the analyzer's rules may).
  touch_events(t);
  return 0;
}
