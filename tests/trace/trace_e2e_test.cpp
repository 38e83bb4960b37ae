// Tracing through the real tiny model: the forward pass's per-layer spans, the engine's
// step spans and scheduling instants, and `strata run --trace` writing a valid file.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <vector>

#include "serving/engine_test_util.h"
#include "support/engine_runs.h"
#include "support/paths.h"
#include "support/process.h"
#include "support/tiny_models.h"
#include "trace/trace_check.h"

namespace strata {
namespace {

std::string trace_text(const Tracer& t) {
  std::ostringstream out;
  t.write(out);
  return out.str();
}

// Every forward span holds one embedding, n_layers layers (in order, each with one of
// every per-layer op), a final norm and the classifier.
// The norms and the SwiGLU run inside the next matmul's span (its row preparation).
void expect_forward_structure(const testing::ParsedTrace& t, int64_t n_layers) {
  const auto forwards = t.named("forward");
  ASSERT_FALSE(forwards.empty());
  for (int f : forwards) {
    const auto& fs = t.spans[static_cast<size_t>(f)];
    EXPECT_EQ(fs.tid, kTraceForward);
    EXPECT_GE(fs.args.value("n_tokens", 0), 1);
    const std::vector<const char*> ops = {"qkv_matmul", "rope",           "write_kv",   "attention",
                                          "out_matmul", "gate_up_matmul", "down_matmul"};
    EXPECT_EQ(t.count_children(f, "layer"), n_layers);
    for (const char* op : {"embedding", "final_norm", "lm_head"})
      EXPECT_EQ(t.count_children(f, op), 1) << op;
    int64_t next_layer = 0;
    for (int c : t.children(f)) {
      const auto& cs = t.spans[static_cast<size_t>(c)];
      if (cs.name != "layer") continue;
      EXPECT_EQ(cs.args.value("layer", -1), next_layer++);
      for (const char* op : ops)
        EXPECT_EQ(t.count_children(c, op), 1) << op << " in layer " << cs.args.dump();
      EXPECT_EQ(t.children(c).size(), ops.size());
    }
  }
  EXPECT_EQ(t.named("layer").size(), forwards.size() * static_cast<size_t>(n_layers));
  EXPECT_EQ(t.named("attention").size(), forwards.size() * static_cast<size_t>(n_layers));
}

TEST(TraceModel, ForwardPassHasNestedPerLayerSpans) {
  auto model = Model::load(testing::aidreams_gguf());
  ThreadPool pool(2);
  Tracer tracer;
  model->set_tracer(&tracer);
  EngineCore engine(*model, pool, testing::one_request_config());
  std::vector<int32_t> prompt = {1};
  for (int i = 1; i < 20; ++i) prompt.push_back(3 + i * 11);
  testing::greedy_tokens(engine, prompt, 4);  // the prompt's forward pass, then 3 decodes
  model->set_tracer(nullptr);
  testing::greedy_tokens(engine, {8}, 1);  // not traced

  const auto t = testing::parse_trace_text(trace_text(tracer));
  EXPECT_EQ(t.threads.at(kTraceForward), "forward");
  ASSERT_EQ(t.named("forward").size(), 4u);
  EXPECT_EQ(t.spans[static_cast<size_t>(t.named("forward")[0])].args["n_tokens"], 20);
  EXPECT_EQ(t.spans[static_cast<size_t>(t.named("forward")[1])].args["n_tokens"], 1);
  expect_forward_structure(t, model->config().n_layers);
}

TEST(TraceCli, RunWritesAValidTrace) {
  const std::string path = testing::scratch_dir() + "/run_trace.json";
  std::filesystem::remove(path);
  const auto r = testing::run_command(
      testing::strata_bin() + " run -m " + testing::aidreams_gguf() +
      " -p 'Once upon a time' -n 8 --temp 0 --ignore-eos -t 1 --trace " + path + " 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto t = testing::parse_trace_file(path);
  EXPECT_EQ(t.threads.at(kTraceForward), "forward");
  // The prompt's forward pass, then one per generated token but the last.
  EXPECT_EQ(t.named("forward").size(), 8u);
  EXPECT_EQ(t.named("sample").size(), 8u);
  for (int s : t.named("sample")) EXPECT_EQ(t.spans[static_cast<size_t>(s)].parent, -1);
  auto model = Model::load(testing::aidreams_gguf());
  expect_forward_structure(t, model->config().n_layers);
}

TEST(TraceCli, UnwritableTracePathFailsBeforeRunning) {
  const auto r =
      testing::run_command(testing::strata_bin() + " run -m " + testing::aidreams_gguf() +
                           " -p hi -n 2 --trace /nonexistent-dir/t.json 2>&1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("--trace"), std::string::npos) << r.out;
}

TEST(TraceEngine, StepsPreemptionsPrefixHitsAndEvictions) {
  auto model = Model::load(testing::aidreams_gguf());
  ThreadPool pool(2);
  Tracer tracer;
  EngineConfig c;
  c.kv_cache_tokens = (60 + 20) * 3 / 2;  // small: forces preemption and evictions
  c.prefix_cache = true;
  c.scheduler.prefill_chunk = 16;
  c.tracer = &tracer;
  EngineCore engine(*model, pool, c);
  EXPECT_EQ(model->tracer(), &tracer);
  const auto requests = testing::random_requests(16, model->config().n_vocab, 60, 20, false, 7);
  generate(engine, nullptr, requests);
  generate(engine, nullptr, {requests[0]});  // the same prompt again: a prefix hit
  testing::expect_no_leaks(engine);
  const EngineMetrics m = engine.metrics();
  ASSERT_GT(m.preemptions, 0);
  ASSERT_GT(m.prefix_hits_tokens, 0);
  ASSERT_GT(m.kv_evictions, 0);

  const auto t = testing::parse_trace_text(trace_text(tracer));
  EXPECT_EQ(t.threads.at(kTraceScheduler), "scheduler");
  EXPECT_EQ(t.threads.at(kTraceForward), "forward");

  // One step span per engine step that ran something, with the batch's composition.
  const auto steps = t.named("step");
  ASSERT_EQ(static_cast<int64_t>(steps.size()), m.steps);
  int64_t decode = 0, prefill = 0;
  for (int s : steps) {
    const auto& st = t.spans[static_cast<size_t>(s)];
    EXPECT_EQ(st.tid, kTraceScheduler);
    EXPECT_EQ(st.parent, -1);
    const int64_t nd = st.args["n_decode_tokens"], np = st.args["n_prefill_tokens"],
                  nr = st.args["n_requests"];
    EXPECT_GE(nr, 1);
    EXPECT_LE(nr, nd + np);
    EXPECT_LE(np + nd, c.scheduler.max_batch_tokens);
    const std::string ids = st.args["requests"];
    EXPECT_FALSE(ids.empty());
    if (ids.find("...") == std::string::npos) {
      EXPECT_EQ(std::count(ids.begin(), ids.end(), ',') + 1, nr) << ids;
    }
    decode += nd;
    prefill += np;
    EXPECT_EQ(t.count_children(s, "schedule"), 1);
    EXPECT_EQ(t.count_children(s, "sample"), 1);
  }
  EXPECT_EQ(decode + prefill, [&] {
    int64_t n = 0;
    for (int f : t.named("forward"))
      n += t.spans[static_cast<size_t>(f)].args["n_tokens"].get<int64_t>();
    return n;
  }());
  // Every forward pass runs inside a step (on the other track).
  ASSERT_EQ(t.named("forward").size(), steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    const auto& st = t.spans[static_cast<size_t>(steps[i])];
    const auto& fw = t.spans[static_cast<size_t>(t.named("forward")[i])];
    EXPECT_GE(fw.ts, st.ts);
    EXPECT_LE(fw.end(), st.end() + 1e-6);
  }
  expect_forward_structure(t, model->config().n_layers);

  // The instants add up to the engine's counters.
  EXPECT_EQ(static_cast<int64_t>(t.instants_named("preempt").size()), m.preemptions);
  int64_t hit_tokens = 0, evicted = 0;
  for (const auto& e : t.instants_named("prefix_hit"))
    hit_tokens += e["args"]["n_cached_tokens"].get<int64_t>();
  for (const auto& e : t.instants_named("kv_evict"))
    evicted += e["args"]["n_blocks"].get<int64_t>();
  EXPECT_EQ(hit_tokens, m.prefix_hits_tokens);
  EXPECT_EQ(evicted, m.kv_evictions);
  for (const auto& e : t.instants) EXPECT_EQ(e["tid"], kTraceScheduler);
  EXPECT_EQ(tracer.dropped(), 0u);
}

}  // namespace
}  // namespace strata
