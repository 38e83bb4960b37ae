// Chrome trace-event recording (`--trace FILE.json`; the file opens in Perfetto or
// chrome://tracing). The caller owns a Tracer and hands components a pointer to it;
// a null pointer means tracing is off, and then a span costs one predictable branch.
//
//   TraceSpan span(tracer, "layer", kTraceForward);   // complete event ("ph":"X")
//   span.arg("layer", l);
//   tracer->instant("preempt", kTraceScheduler, "request", id);  // "ph":"i"
//
// Events are plain structs in one buffer that is reserved up front and grows rarely (by
// doubling, up to max_events); past that, events are dropped and counted, never
// allocated per token. Names and argument keys must be string literals (or outlive the
// tracer). A span takes its slot when it begins, so parents precede their children in
// the buffer and the file. Timestamps are steady_clock nanoseconds since the tracer
// was made, written as microseconds. One thread records (the engine's); write() runs
// after that thread is done.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

// Tracks ("tid"s), named by thread_name metadata events in the file.
inline constexpr int32_t kTraceScheduler = 1;  // engine steps, scheduling, instants
inline constexpr int32_t kTraceForward = 2;    // forward pass, per-layer spans, sampling

struct TracerOptions {
  size_t initial_events = size_t{1} << 16;  // reserved up front
  size_t max_events = size_t{1} << 22;      // beyond this, events are dropped and counted
  size_t text_bytes = size_t{1} << 20;      // arena for string arguments, never grown
};

class Tracer {
 public:
  static constexpr int kMaxArgs = 3;
  static constexpr size_t kMaxText = 96;  // bytes kept of one string argument

  explicit Tracer(const TracerOptions& options = {});

  // Begins a complete event on `track`; returns its slot, or -1 when the buffer is full.
  int64_t begin(const char* name, int32_t track);
  // Sets the slot's duration to now minus its start.
  void end(int64_t slot);
  // Removes a begun event from the output (e.g. a step that found nothing to do).
  void cancel(int64_t slot);
  // Adds an integer argument (at most kMaxArgs per event; further ones are ignored).
  void arg(int64_t slot, const char* key, int64_t value);
  // Sets the event's one string argument (copied, truncated to kMaxText bytes).
  void text_arg(int64_t slot, const char* key, std::string_view value);
  // An instant event ("ph":"i", thread scope) with up to two integer arguments.
  void instant(const char* name, int32_t track, const char* key = nullptr, int64_t value = 0,
               const char* key2 = nullptr, int64_t value2 = 0);

  size_t size() const { return events_.size(); }
  uint64_t dropped() const { return dropped_; }

  // {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}.
  void write(std::ostream& out) const;
  // Writes the file; throws strata::Error when it cannot.
  void write(const std::string& path) const;

 private:
  struct Event {
    const char* name = nullptr;  // null: cancelled
    int64_t ts_ns = 0;
    int64_t dur_ns = -1;  // -1: instant
    int32_t track = 0;
    int32_t n_args = 0;
    const char* arg_keys[kMaxArgs] = {};
    int64_t arg_values[kMaxArgs] = {};
    const char* text_key = nullptr;
    uint32_t text_offset = 0, text_len = 0;
  };

  int64_t now_ns() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_)
        .count();
  }
  int64_t push(const char* name, int32_t track, int64_t ts_ns, int64_t dur_ns);

  TracerOptions options_;
  std::chrono::steady_clock::time_point start_;
  std::vector<Event> events_;
  std::vector<char> text_;
  uint64_t dropped_ = 0;
};

// RAII complete event: begins at construction, ends at destruction. With a null tracer
// every member is a no-op.
class TraceSpan {
 public:
  TraceSpan(Tracer* tracer, const char* name, int32_t track)
      : tracer_(tracer), track_(track), slot_(tracer ? tracer->begin(name, track) : -1) {}
  ~TraceSpan() {
    if (slot_ >= 0) tracer_->end(slot_);
  }
  TraceSpan(const TraceSpan&) = delete;
  TraceSpan& operator=(const TraceSpan&) = delete;

  TraceSpan& arg(const char* key, int64_t value) {
    if (slot_ >= 0) tracer_->arg(slot_, key, value);
    return *this;
  }
  TraceSpan& text_arg(const char* key, std::string_view value) {
    if (slot_ >= 0) tracer_->text_arg(slot_, key, value);
    return *this;
  }
  // Ends this span now (the destructor then does nothing).
  void end() {
    if (slot_ >= 0) tracer_->end(slot_);
    slot_ = -1;
  }
  // Ends this span and begins the next one on the same track, so consecutive phases of a
  // function read as a flat sequence of `span.next("...")` lines.
  void next(const char* name) {
    if (!tracer_) return;
    if (slot_ >= 0) tracer_->end(slot_);
    slot_ = tracer_->begin(name, track_);
  }
  // Drops this span from the output.
  void cancel() {
    if (slot_ >= 0) tracer_->cancel(slot_);
    slot_ = -1;
  }

 private:
  Tracer* tracer_;
  int32_t track_;
  int64_t slot_;
};

}  // namespace strata
