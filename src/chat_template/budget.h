// The cost accounting of one render: work units, live value bytes and a wall-clock
// deadline (see RenderOptions). Loop, recursion and output caps bound how often or how deep
// a template may do something; these bound what it costs in total, so that no template,
// however it combines cheap-looking steps, can hold a thread or its memory for long.
//
// The renderer owns one RenderBudget and installs it for its thread while it renders, so
// that code with no Renderer at hand (Value::string, DictObj::set, equals, iterate, ...) can
// charge it through the free functions below; outside a render they do nothing.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace strata::chat {

struct BudgetLimits {
  uint64_t max_work_units;
  uint64_t max_value_bytes;
  double deadline_s;                               // <= 0: none (besides `deadline`)
  std::chrono::steady_clock::time_point deadline;  // time_point::max(): none
};

// Work-unit weights. A unit is meant as roughly a nanosecond of this interpreter on a slow
// core, so that the work budget is a deterministic stand-in for CPU time (the deadline is
// the wall-clock backstop); the weights come from timing each kind of step in isolation
// (docs/TEMPLATE_SANDBOX.md). Scans (search, UTF-8 decoding, comparison) cost a unit per
// byte or element; copying into a new string is cheaper per byte.
constexpr uint64_t kStepUnits = 8;         // a statement, an expression, a call
constexpr uint64_t kMacroCallUnits = 512;  // a macro invocation: its scope, arguments, capture
constexpr uint64_t kBytesPerUnit = 16;     // bytes copied into a new string (or the output)
constexpr uint64_t kDecodeUnits = 4;       // per byte of UTF-8 decoded to index or slice a str
constexpr uint64_t kItemUnits = 8;         // a list item or dict entry created, copied, printed
constexpr uint64_t kCompareUnits = 4;      // one comparison of a sort

// Approximate heap cost of a string value beyond its characters (control block, string
// object, allocator rounding) and of one list item or dict entry.
constexpr uint64_t kStringValueBytes = 64;
constexpr uint64_t kListItemBytes = 32;
constexpr uint64_t kDictEntryBytes = 96;  // the entry, plus its share of the lookup index
constexpr uint64_t kContainerBytes = 64;  // the list or dict object itself

class RenderBudget {
 public:
  explicit RenderBudget(const BudgetLimits& limits);

  // Work units (see the weights above).
  void work(uint64_t units) {
    work_ += units;
    // One compare on the hot path: check() runs every kCheckInterval units, when the limit
    // is reached, and (once a limit has failed) on every charge.
    if (work_ >= next_check_) [[unlikely]]
      check();
  }
  // Bytes of values (and output buffers) allocated; freed values give theirs back.
  void alloc(uint64_t bytes) {
    live_ += bytes;
    if (live_ > peak_) [[unlikely]]
      new_peak();
  }
  void release(uint64_t bytes) { live_ -= bytes < live_ ? bytes : live_; }

  uint64_t work_units() const { return work_; }
  uint64_t peak_value_bytes() const { return peak_; }
  double elapsed_s() const;

 private:
  // How often (in work units) the clock is read. A unit is a few nanoseconds at most, so
  // the deadline is noticed within tens of microseconds; reading the clock costs ~20 ns.
  static constexpr uint64_t kCheckInterval = 1024;

  void check();
  void new_peak();
  uint64_t after_limit() const;  // the first work count past the limit
  [[noreturn]] void exceeded(std::string message);

  BudgetLimits limits_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point deadline_;  // the earlier of both deadlines
  bool has_deadline_ = false;
  uint64_t work_ = 0;
  uint64_t next_check_ = 0;
  uint64_t live_ = 0;
  uint64_t peak_ = 0;
  std::string failure_;  // the first exceeded limit's message; repeated by later charges
};

// The budget of the render running on this thread, or null.
inline thread_local RenderBudget* t_render_budget = nullptr;

inline void charge_work(uint64_t units) {
  if (RenderBudget* b = t_render_budget) b->work(units);
}
// Work of sorting n items: n log2 n comparisons.
inline void charge_sort(size_t n) {
  uint64_t log2n = 1;
  while ((size_t{1} << log2n) < n) ++log2n;
  charge_work(n * log2n * kCompareUnits);
}
inline void charge_bytes(uint64_t bytes) {
  if (RenderBudget* b = t_render_budget) b->alloc(bytes);
}
inline void release_bytes(uint64_t bytes) {
  if (RenderBudget* b = t_render_budget) b->release(bytes);
}

// Installs a budget for the current thread for the lifetime of this object.
class BudgetInstall {
 public:
  explicit BudgetInstall(RenderBudget* b) : saved_(t_render_budget) { t_render_budget = b; }
  ~BudgetInstall() { t_render_budget = saved_; }
  BudgetInstall(const BudgetInstall&) = delete;
  BudgetInstall& operator=(const BudgetInstall&) = delete;

 private:
  RenderBudget* saved_;
};

// Bytes held by a temporary buffer (not a value) while it is built; given back on scope exit.
class TransientBytes {
 public:
  TransientBytes() = default;
  ~TransientBytes() { release_bytes(bytes_); }
  TransientBytes(const TransientBytes&) = delete;
  TransientBytes& operator=(const TransientBytes&) = delete;
  void add(uint64_t bytes) {
    charge_bytes(bytes);
    bytes_ += bytes;
  }

 private:
  uint64_t bytes_ = 0;
};

}  // namespace strata::chat
