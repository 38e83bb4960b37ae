// Chrome trace-event recording (`--trace FILE.json`; the file opens in Perfetto or
// chrome://tracing). The caller owns a Tracer and hands components a pointer to it;
// a null pointer means tracing is off, and then a span costs one predictable branch.
//
//   TraceSpan span(tracer, "layer", kTraceForward);   // complete event ("ph":"X")
//   span.arg("layer", l);
//   tracer->instant("preempt", kTraceScheduler, "request", id);  // "ph":"i"
//
// Events are plain structs in one buffer that is allocated and touched up front (a first
// touch of fresh memory is a page fault, which costs microseconds on a VM) and grows
// rarely (by doubling, up to max_events); past that, events are dropped and counted,
// never allocated per token. Integer arguments sit in a second such buffer. Names and
// argument keys must be string literals (or outlive the tracer). A span takes its slot
// when it begins, so parents precede their children in the buffer and the file.
// Timestamps are written as steady_clock microseconds since the tracer was made; on
// x86-64 with an invariant TSC they are recorded as TSC ticks (a few ns to read, against
// ~30 ns for steady_clock on a VM) and converted with the tick rate measured against
// steady_clock over the tracer's life. One thread records (the engine's); write() runs
// after that thread is done.
#pragma once

#include <algorithm>
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
  size_t initial_events = size_t{1} << 18;  // allocated and touched up front (32 bytes each)
  size_t max_events = size_t{1} << 22;      // beyond this, events are dropped and counted
};

class Tracer {
 public:
  static constexpr int kMaxArgs = 3;      // integer arguments per event
  static constexpr size_t kMaxText = 96;  // bytes kept of an event's one string argument

  explicit Tracer(const TracerOptions& options = {});

  // Begins a complete event on `track`; returns its slot, or -1 when the buffer is full.
  int64_t begin(const char* name, int32_t track);
  // Sets the slot's duration to now minus its start.
  void end(int64_t slot);
  // Ends `slot` (if >= 0) and begins the next event at the same instant: one clock read.
  int64_t next(int64_t slot, const char* name, int32_t track);
  // Removes a begun event from the output (e.g. a step that found nothing to do).
  void cancel(int64_t slot);
  // Adds an integer argument (at most kMaxArgs per event; further ones are ignored).
  void arg(int64_t slot, const char* key, int64_t value);
  // Sets the event's one string argument (copied, truncated to kMaxText bytes; a
  // second one is ignored).
  void text_arg(int64_t slot, const char* key, std::string_view value);
  // An instant event ("ph":"i", thread scope) with up to two integer arguments.
  void instant(const char* name, int32_t track, const char* key = nullptr, int64_t value = 0,
               const char* key2 = nullptr, int64_t value2 = 0);

  size_t size() const { return events_.n; }
  uint64_t dropped() const { return dropped_; }

  // {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}.
  void write(std::ostream& out) const;
  // Writes the file; throws strata::Error when it cannot.
  void write(const std::string& path) const;

 private:
  struct Event {       // 32 bytes: most events (per-layer ops) have no arguments
    const char* name;  // null: cancelled
    int64_t ts;        // clock ticks since start (see now())
    int64_t dur;       // ticks; -1: instant
    int32_t track;
    uint16_t n_args;
    uint16_t has_text;
  };
  struct Arg {
    const char* key;
    int64_t value;     // the integer, or the text's offset in text_
    uint32_t slot;     // the event it belongs to
    int32_t text_len;  // -1: an integer argument
  };
  // Storage whose elements exist (and whose pages were touched) before they are used:
  // [0, n) in use; grows by doubling, which copies, so it is sized to grow rarely.
  template <class T>
  struct Buffer {
    std::vector<T> data;
    size_t n = 0;
    T* push(size_t cap = SIZE_MAX) {  // null when `cap` elements are in use
      if (n == data.size()) {
        if (n >= cap) return nullptr;
        data.resize(std::min(std::max<size_t>(2 * data.size(), 1024), cap));
      }
      return &data[n++];
    }
  };

  int64_t now() const;  // ticks since start: TSC ticks, or steady_clock ns
  double ns_per_tick() const;
  int64_t push(const char* name, int32_t track, int64_t ts, int64_t dur);

  TracerOptions options_;
  bool use_tsc_ = false;
  uint64_t tsc_start_ = 0;
  std::chrono::steady_clock::time_point start_;
  Buffer<Event> events_;
  Buffer<Arg> args_;
  Buffer<char> text_;
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
    if (tracer_) slot_ = tracer_->next(slot_, name, track_);
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
