#include "trace/tracer.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <span>
#include <thread>

#include "core/error.h"

namespace strata {
namespace {

const char* track_name(int32_t track) {
  switch (track) {
    case kTraceScheduler:
      return "scheduler";
    case kTraceForward:
      return "forward";
    default:
      return nullptr;
  }
}

void write_string(std::ostream& out, std::string_view s) {
  out << '"';
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out << '\\' << c;
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out << buf;
    } else {
      out << c;
    }
  }
  out << '"';
}

// True when the TSC ticks at a constant rate in every power state (CPUID 0x80000007,
// EDX bit 8), so that it can stand in for steady_clock.
bool invariant_tsc() {
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0x80000000, &a, &b, &c, &d) || a < 0x80000007) return false;
  if (!__get_cpuid(0x80000007, &a, &b, &c, &d)) return false;
  return (d & (1u << 8)) != 0;
#else
  return false;
#endif
}

// Nanoseconds as microseconds with three decimals.
void write_us(std::ostream& out, int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%" PRId64 ".%03" PRId64, ns / 1000, ns % 1000);
  out << buf;
}

}  // namespace

Tracer::Tracer(const TracerOptions& options) : options_(options), use_tsc_(invariant_tsc()) {
#if defined(__x86_64__)
  tsc_start_ = __rdtsc();
#endif
  start_ = std::chrono::steady_clock::now();
  options_.max_events = std::max<size_t>(options_.max_events, 1);
  // resize(), not reserve(): value-initialising writes every page now, so recording
  // does not take page faults (a few microseconds each on a VM).
  events_.data.resize(std::max<size_t>(std::min(options_.initial_events, options_.max_events), 1));
  args_.data.resize(std::max<size_t>(events_.data.size() / 4, 1024));  // ~1 in 6 has one
  text_.data.resize(std::max<size_t>(events_.data.size(), 1024));
}

int64_t Tracer::now() const {
#if defined(__x86_64__)
  if (use_tsc_) return static_cast<int64_t>(__rdtsc() - tsc_start_);
#endif
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                              start_)
      .count();
}

double Tracer::ns_per_tick() const {
  if (!use_tsc_) return 1.0;
  // The rate over the tracer's life so far (at least 2 ms, for a precise ratio).
  for (;;) {
    const int64_t ticks = now();
    const double ns =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start_).count();
    if (ns >= 2e6 && ticks > 0) return ns / static_cast<double>(ticks);
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
}

int64_t Tracer::push(const char* name, int32_t track, int64_t ts, int64_t dur) {
  Event* e = events_.push(options_.max_events);
  if (!e) {
    ++dropped_;
    return -1;
  }
  *e = Event{name, ts, dur, track, 0, 0};
  return static_cast<int64_t>(events_.n - 1);
}

int64_t Tracer::begin(const char* name, int32_t track) {
  return push(name, track, now(), 0);
}

void Tracer::end(int64_t slot) {
  Event& e = events_.data[static_cast<size_t>(slot)];
  e.dur = std::max<int64_t>(now() - e.ts, 0);
}

int64_t Tracer::next(int64_t slot, const char* name, int32_t track) {
  const int64_t t = now();
  if (slot >= 0) {
    Event& e = events_.data[static_cast<size_t>(slot)];
    e.dur = std::max<int64_t>(t - e.ts, 0);
  }
  return push(name, track, t, 0);
}

void Tracer::cancel(int64_t slot) {
  events_.data[static_cast<size_t>(slot)].name = nullptr;
}

void Tracer::arg(int64_t slot, const char* key, int64_t value) {
  Event& e = events_.data[static_cast<size_t>(slot)];
  if (e.n_args >= kMaxArgs) return;
  ++e.n_args;
  *args_.push() = Arg{key, value, static_cast<uint32_t>(slot), -1};
}

void Tracer::text_arg(int64_t slot, const char* key, std::string_view value) {
  Event& e = events_.data[static_cast<size_t>(slot)];
  if (e.has_text) return;
  e.has_text = 1;
  const size_t n = std::min(value.size(), kMaxText);
  const auto offset = static_cast<int64_t>(text_.n);
  for (size_t i = 0; i < n; ++i) *text_.push() = value[i];
  *args_.push() = Arg{key, offset, static_cast<uint32_t>(slot), static_cast<int32_t>(n)};
}

void Tracer::instant(const char* name, int32_t track, const char* key, int64_t value,
                     const char* key2, int64_t value2) {
  const int64_t slot = push(name, track, now(), -1);
  if (slot < 0) return;
  if (key) arg(slot, key, value);
  if (key2) arg(slot, key2, value2);
}

void Tracer::write(std::ostream& out) const {
  const std::span<const Event> events(events_.data.data(), events_.n);
  // Arguments in event order (recorded in time order, so a step's come after its children's).
  std::vector<uint32_t> arg_order(args_.n);
  for (size_t i = 0; i < arg_order.size(); ++i) arg_order[i] = static_cast<uint32_t>(i);
  std::stable_sort(arg_order.begin(), arg_order.end(),
                   [&](uint32_t a, uint32_t b) { return args_.data[a].slot < args_.data[b].slot; });
  size_t next_arg = 0;
  const double scale = ns_per_tick();
  // Start and end are converted separately (rounding is monotonic), so a child that
  // ends before its parent in ticks still does in nanoseconds.
  auto to_ns = [scale](int64_t ticks) {
    return static_cast<int64_t>(
        std::llround(static_cast<double>(std::max<int64_t>(ticks, 0)) * scale));
  };
  std::set<int32_t> tracks;
  for (const Event& e : events) {
    if (e.name) tracks.insert(e.track);
  }
  out << "{\"traceEvents\":[\n";
  out << R"({"name":"process_name","ph":"M","ts":0,"pid":1,"tid":)"
      << (tracks.empty() ? 0 : *tracks.begin()) << R"(,"args":{"name":"strata"}})";
  for (const int32_t t : tracks) {
    const char* name = track_name(t);
    out << ",\n"
        << R"({"name":"thread_name","ph":"M","ts":0,"pid":1,"tid":)" << t << R"(,"args":{"name":)";
    write_string(out, name ? name : "track " + std::to_string(t));
    out << "}},\n"
        << R"({"name":"thread_sort_index","ph":"M","ts":0,"pid":1,"tid":)" << t
        << R"(,"args":{"sort_index":)" << t << "}}";
  }
  for (size_t slot = 0; slot < events.size(); ++slot) {
    const Event& e = events[slot];
    const size_t first_arg = next_arg;
    while (next_arg < arg_order.size() && args_.data[arg_order[next_arg]].slot == slot) ++next_arg;
    if (!e.name) continue;
    out << ",\n{\"name\":";
    write_string(out, e.name);
    out << (e.dur < 0 ? R"(,"ph":"i","s":"t","ts":)" : R"(,"ph":"X","ts":)");
    const int64_t ts_ns = to_ns(e.ts);
    write_us(out, ts_ns);
    if (e.dur >= 0) {
      out << ",\"dur\":";
      write_us(out, to_ns(e.ts + e.dur) - ts_ns);
    }
    out << ",\"pid\":1,\"tid\":" << e.track;
    if (next_arg > first_arg) {
      out << ",\"args\":{";
      for (size_t i = first_arg; i < next_arg; ++i) {
        const Arg& a = args_.data[arg_order[i]];
        if (i > first_arg) out << ',';
        write_string(out, a.key);
        out << ':';
        if (a.text_len < 0) {
          out << a.value;
        } else {
          write_string(
              out, std::string_view(text_.data.data() + a.value, static_cast<size_t>(a.text_len)));
        }
      }
      out << '}';
    }
    out << '}';
  }
  out << "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"dropped_events\":" << dropped_ << "}}\n";
}

void Tracer::write(const std::string& path) const {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error("trace: cannot open '" + path + "' for writing");
  write(out);
  out.flush();
  if (!out) throw Error("trace: writing '" + path + "' failed");
}

}  // namespace strata
