// The Tracer on its own: nested spans, instants, arguments, dropped events and the
// trace-event JSON it writes.
#include "trace/tracer.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "core/error.h"
#include "trace/trace_check.h"

namespace strata {
namespace {

std::string to_text(const Tracer& t) {
  std::ostringstream out;
  t.write(out);
  return out.str();
}

void busy(int n) {
  volatile int x = 0;
  for (int i = 0; i < n; ++i) x = x + i;
}

// Back-to-back empty spans (a step's final_norm and lm_head without logit rows) can share
// one nanosecond timestamp; the checker must read them as siblings, not nest them.
TEST(TraceCheck, EmptySpansAtOneTimestampAreSiblings) {
  const std::string text = R"({"traceEvents":[
    {"name":"forward","ph":"X","ts":10.000,"dur":5.000,"pid":1,"tid":2},
    {"name":"final_norm","ph":"X","ts":15.000,"dur":0.000,"pid":1,"tid":2},
    {"name":"lm_head","ph":"X","ts":15.000,"dur":0.000,"pid":1,"tid":2}
  ],"displayTimeUnit":"ms"})";
  const auto t = testing::parse_trace_text(text);
  ASSERT_EQ(t.named("forward").size(), 1u);
  const int f = t.named("forward")[0];
  EXPECT_EQ(t.count_children(f, "final_norm"), 1);
  EXPECT_EQ(t.count_children(f, "lm_head"), 1);
}

TEST(Tracer, NestedSpansAndInstantsMakeValidTraceEvents) {
  Tracer tracer;
  {
    TraceSpan step(&tracer, "step", kTraceScheduler);
    step.arg("n_decode_tokens", 3).arg("n_prefill_tokens", 40).text_arg("requests", "1,2,3");
    {
      TraceSpan schedule(&tracer, "schedule", kTraceScheduler);
      busy(1000);
    }
    tracer.instant("preempt", kTraceScheduler, "request", 7);
    TraceSpan forward(&tracer, "forward", kTraceForward);
    for (int l = 0; l < 3; ++l) {
      TraceSpan layer(&tracer, "layer", kTraceForward);
      layer.arg("layer", l);
      TraceSpan op(&tracer, "attn_norm", kTraceForward);
      busy(100);
      op.next("qkv_matmul");
      busy(100);
      op.next("attention");
      busy(100);
    }
  }
  EXPECT_EQ(tracer.size(), 16u);
  EXPECT_EQ(tracer.dropped(), 0u);

  const auto t = testing::parse_trace_text(to_text(tracer));
  EXPECT_EQ(t.threads.at(kTraceScheduler), "scheduler");
  EXPECT_EQ(t.threads.at(kTraceForward), "forward");
  ASSERT_EQ(t.named("step").size(), 1u);
  const int step = t.named("step")[0];
  const auto& args = t.spans[static_cast<size_t>(step)].args;
  EXPECT_EQ(args["n_decode_tokens"], 3);
  EXPECT_EQ(args["n_prefill_tokens"], 40);
  EXPECT_EQ(args["requests"], "1,2,3");
  EXPECT_EQ(t.spans[static_cast<size_t>(step)].parent, -1);
  EXPECT_EQ(t.count_children(step, "schedule"), 1);

  ASSERT_EQ(t.named("forward").size(), 1u);
  const int forward = t.named("forward")[0];
  EXPECT_EQ(t.spans[static_cast<size_t>(forward)].parent, -1);  // another track than step
  const auto layers = t.named("layer");
  ASSERT_EQ(layers.size(), 3u);
  for (size_t l = 0; l < layers.size(); ++l) {
    const auto& layer = t.spans[static_cast<size_t>(layers[l])];
    EXPECT_EQ(layer.parent, forward);
    EXPECT_EQ(layer.args["layer"], static_cast<int>(l));
    EXPECT_EQ(t.children(layers[l]).size(), 3u);
    for (const char* op : {"attn_norm", "qkv_matmul", "attention"}) {
      EXPECT_EQ(t.count_children(layers[l], op), 1) << op;
    }
  }
  // next() ends one phase before the next begins.
  const auto norms = t.named("attn_norm"), matmuls = t.named("qkv_matmul");
  for (size_t i = 0; i < norms.size(); ++i) {
    EXPECT_LE(t.spans[static_cast<size_t>(norms[i])].end(),
              t.spans[static_cast<size_t>(matmuls[i])].ts + 1e-6);
  }
  const auto preempts = t.instants_named("preempt");
  ASSERT_EQ(preempts.size(), 1u);
  EXPECT_EQ(preempts[0]["tid"], kTraceScheduler);
  EXPECT_EQ(preempts[0]["args"]["request"], 7);
  EXPECT_EQ(t.root["otherData"]["dropped_events"], 0);
}

TEST(Tracer, NullTracerRecordsNothing) {
  TraceSpan span(nullptr, "forward", kTraceForward);
  span.arg("n_tokens", 1).text_arg("requests", "1");
  span.next("layer");
  span.end();
  span.cancel();
  SUCCEED();
}

TEST(Tracer, CancelledSpansAreLeftOut) {
  Tracer tracer;
  {
    TraceSpan step(&tracer, "step", kTraceScheduler);
    TraceSpan schedule(&tracer, "schedule", kTraceScheduler);
    schedule.cancel();
    step.cancel();
  }
  { TraceSpan kept(&tracer, "kept", kTraceScheduler); }
  const auto t = testing::parse_trace_text(to_text(tracer));
  ASSERT_EQ(t.spans.size(), 1u);
  EXPECT_EQ(t.spans[0].name, "kept");
}

TEST(Tracer, FullBufferDropsAndCountsInsteadOfGrowing) {
  TracerOptions o;
  o.initial_events = 4;
  o.max_events = 10;
  Tracer tracer(o);
  {
    TraceSpan outer(&tracer, "outer", kTraceForward);
    for (int i = 0; i < 20; ++i) {
      TraceSpan inner(&tracer, "inner", kTraceForward);
      inner.arg("i", i);
    }
    tracer.instant("late", kTraceScheduler);
  }
  EXPECT_EQ(tracer.size(), 10u);
  EXPECT_EQ(tracer.dropped(), 12u);  // 11 spans and the instant
  const auto t = testing::parse_trace_text(to_text(tracer));
  EXPECT_EQ(t.spans.size(), 10u);
  EXPECT_EQ(t.named("inner").size(), 9u);
  EXPECT_EQ(t.root["otherData"]["dropped_events"], 12);
  EXPECT_TRUE(t.instants.empty());
}

TEST(Tracer, GrowsFromASmallReservation) {
  TracerOptions o;
  o.initial_events = 2;
  Tracer tracer(o);
  for (int i = 0; i < 5000; ++i) TraceSpan s(&tracer, "s", kTraceForward);
  EXPECT_EQ(tracer.size(), 5000u);
  EXPECT_EQ(tracer.dropped(), 0u);
}

TEST(Tracer, ArgumentsAreCappedEscapedAndTruncated) {
  Tracer tracer;
  {
    TraceSpan s(&tracer, "s", kTraceScheduler);
    s.arg("a", 1).arg("b", -2).arg("c", int64_t{1} << 40).arg("d", 4);  // d: beyond kMaxArgs
    s.text_arg("text", std::string("quote\" backslash\\ newline\n tab\t") + std::string(200, 'x'));
  }
  tracer.instant("i", kTraceScheduler, "k", 5, "k2", 6);
  const auto t = testing::parse_trace_text(to_text(tracer));
  ASSERT_EQ(t.spans.size(), 1u);
  const auto& args = t.spans[0].args;
  EXPECT_EQ(args["a"], 1);
  EXPECT_EQ(args["b"], -2);
  EXPECT_EQ(args["c"], int64_t{1} << 40);
  EXPECT_FALSE(args.contains("d"));
  const std::string text = args["text"].get<std::string>();
  EXPECT_EQ(text.size(), Tracer::kMaxText);
  EXPECT_EQ(text.substr(0, 31), "quote\" backslash\\ newline\n tab\t");
  ASSERT_EQ(t.instants.size(), 1u);
  EXPECT_EQ(t.instants[0]["args"]["k"], 5);
  EXPECT_EQ(t.instants[0]["args"]["k2"], 6);
}

TEST(Tracer, TimestampsAreMicrosecondsSinceTheTracerStarted) {
  Tracer tracer;
  { TraceSpan s(&tracer, "s", kTraceForward); }
  const auto t = testing::parse_trace_text(to_text(tracer));
  ASSERT_EQ(t.spans.size(), 1u);
  EXPECT_LT(t.spans[0].ts, 10e6);  // well under 10 s after construction
  EXPECT_LT(t.spans[0].dur, 10e6);
}

TEST(Tracer, WriteReportsAnUnwritablePath) {
  Tracer tracer;
  EXPECT_THROW(tracer.write(std::string("/nonexistent-dir/trace.json")), Error);
}

}  // namespace
}  // namespace strata
