#include "chat_template/budget.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "chat_template/value.h"

namespace strata::chat {

namespace {

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", s);
  return buf;
}

}  // namespace

RenderBudget::RenderBudget(const BudgetLimits& limits)
    : limits_(limits), start_(std::chrono::steady_clock::now()), deadline_(limits.deadline) {
  has_deadline_ = deadline_ != std::chrono::steady_clock::time_point::max();
  if (limits_.deadline_s > 0) {
    // Clamped so that a huge value cannot overflow the clock's representation.
    double s = limits_.deadline_s < 1e9 ? limits_.deadline_s : 1e9;
    auto relative = start_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                 std::chrono::duration<double>(s));
    if (!has_deadline_ || relative < deadline_) deadline_ = relative;
    has_deadline_ = true;
  }
  next_check_ = std::min(kCheckInterval, after_limit());
}

uint64_t RenderBudget::after_limit() const {
  const uint64_t limit = limits_.max_work_units;
  return limit == std::numeric_limits<uint64_t>::max() ? limit : limit + 1;
}

double RenderBudget::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void RenderBudget::exceeded(std::string message) {
  failure_ = std::move(message);
  next_check_ = 0;  // every later charge fails again, should anything catch this one
  fail(failure_);
}

void RenderBudget::check() {
  if (!failure_.empty()) fail(failure_);
  if (work_ > limits_.max_work_units) {
    exceeded("template work limit (max_work_units=" + std::to_string(limits_.max_work_units) +
             ") exceeded");
  }
  if (has_deadline_) {
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline_) {
      double took = std::chrono::duration<double>(now - start_).count();
      std::string which = limits_.deadline_s > 0 && deadline_ != limits_.deadline
                              ? "deadline_s=" + seconds_text(limits_.deadline_s)
                              : "RenderOptions::deadline";
      exceeded("template deadline (" + which + ") exceeded after " + seconds_text(took) + " s");
    }
  }
  next_check_ = std::min(work_ + kCheckInterval, after_limit());
}

void RenderBudget::new_peak() {
  peak_ = live_;
  if (peak_ > limits_.max_value_bytes) {
    exceeded("template memory limit (max_value_bytes=" + std::to_string(limits_.max_value_bytes) +
             ") exceeded");
  }
}

}  // namespace strata::chat
