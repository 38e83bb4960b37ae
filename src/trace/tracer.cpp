#include "trace/tracer.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>

#include "core/error.h"

namespace strata {
namespace {

const char* track_name(int32_t track) {
  switch (track) {
    case kTraceScheduler: return "scheduler";
    case kTraceForward: return "forward";
    default: return nullptr;
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

// Nanoseconds as microseconds with three decimals.
void write_us(std::ostream& out, int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%" PRId64 ".%03" PRId64, ns / 1000, ns % 1000);
  out << buf;
}

}  // namespace

Tracer::Tracer(const TracerOptions& options) : options_(options), start_(std::chrono::steady_clock::now()) {
  options_.max_events = std::max<size_t>(options_.max_events, 1);
  events_.reserve(std::min(options_.initial_events, options_.max_events));
  text_.reserve(options_.text_bytes);
}

int64_t Tracer::push(const char* name, int32_t track, int64_t ts_ns, int64_t dur_ns) {
  if (events_.size() >= options_.max_events) {
    ++dropped_;
    return -1;
  }
  if (events_.size() == events_.capacity()) {
    events_.reserve(std::min(std::max<size_t>(2 * events_.capacity(), 1024), options_.max_events));
  }
  Event& e = events_.emplace_back();
  e.name = name;
  e.track = track;
  e.ts_ns = ts_ns;
  e.dur_ns = dur_ns;
  return static_cast<int64_t>(events_.size() - 1);
}

int64_t Tracer::begin(const char* name, int32_t track) { return push(name, track, now_ns(), 0); }

void Tracer::end(int64_t slot) {
  Event& e = events_[static_cast<size_t>(slot)];
  e.dur_ns = std::max<int64_t>(now_ns() - e.ts_ns, 0);
}

void Tracer::cancel(int64_t slot) { events_[static_cast<size_t>(slot)].name = nullptr; }

void Tracer::arg(int64_t slot, const char* key, int64_t value) {
  Event& e = events_[static_cast<size_t>(slot)];
  if (e.n_args >= kMaxArgs) return;
  e.arg_keys[e.n_args] = key;
  e.arg_values[e.n_args] = value;
  ++e.n_args;
}

void Tracer::text_arg(int64_t slot, const char* key, std::string_view value) {
  Event& e = events_[static_cast<size_t>(slot)];
  const size_t n = std::min(value.size(), kMaxText);
  if (text_.size() + n > options_.text_bytes) {
    ++dropped_;  // the event stays, without its text
    return;
  }
  e.text_key = key;
  e.text_offset = static_cast<uint32_t>(text_.size());
  e.text_len = static_cast<uint32_t>(n);
  text_.insert(text_.end(), value.begin(), value.begin() + static_cast<ptrdiff_t>(n));
}

void Tracer::instant(const char* name, int32_t track, const char* key, int64_t value, const char* key2,
                     int64_t value2) {
  const int64_t slot = push(name, track, now_ns(), -1);
  if (slot < 0) return;
  if (key) arg(slot, key, value);
  if (key2) arg(slot, key2, value2);
}

void Tracer::write(std::ostream& out) const {
  std::set<int32_t> tracks;
  for (const Event& e : events_) {
    if (e.name) tracks.insert(e.track);
  }
  out << "{\"traceEvents\":[\n";
  out << R"({"name":"process_name","ph":"M","ts":0,"pid":1,"tid":)" << (tracks.empty() ? 0 : *tracks.begin())
      << R"(,"args":{"name":"strata"}})";
  for (const int32_t t : tracks) {
    const char* name = track_name(t);
    out << ",\n" << R"({"name":"thread_name","ph":"M","ts":0,"pid":1,"tid":)" << t << R"(,"args":{"name":)";
    write_string(out, name ? name : "track " + std::to_string(t));
    out << "}},\n" << R"({"name":"thread_sort_index","ph":"M","ts":0,"pid":1,"tid":)" << t
        << R"(,"args":{"sort_index":)" << t << "}}";
  }
  for (const Event& e : events_) {
    if (!e.name) continue;
    out << ",\n{\"name\":";
    write_string(out, e.name);
    out << (e.dur_ns < 0 ? R"(,"ph":"i","s":"t","ts":)" : R"(,"ph":"X","ts":)");
    write_us(out, e.ts_ns);
    if (e.dur_ns >= 0) {
      out << ",\"dur\":";
      write_us(out, e.dur_ns);
    }
    out << ",\"pid\":1,\"tid\":" << e.track;
    if (e.n_args > 0 || e.text_key) {
      out << ",\"args\":{";
      for (int i = 0; i < e.n_args; ++i) {
        if (i > 0) out << ',';
        write_string(out, e.arg_keys[i]);
        out << ':' << e.arg_values[i];
      }
      if (e.text_key) {
        if (e.n_args > 0) out << ',';
        write_string(out, e.text_key);
        out << ':';
        write_string(out, std::string_view(text_.data() + e.text_offset, e.text_len));
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
