// What --trace costs: one span with tracing off (a null Tracer*) and on, and one decode
// step of the tiny real model (aidreams260K from ../shared/models, 4 layers, ~25 us per
// token: the worst case, since its 44 spans per forward pass are spread over the least
// work) untraced and traced, interleaved in one process so machine noise hits both.
// Set STRATA_SHARED to the shared folder when not run from the repo.
//
//   build/bench/trace_bench
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "convert/llama2c.h"
#include "engine/engine_core.h"
#include "model/model.h"
#include "trace/tracer.h"

namespace {

using strata::kTraceForward;
using strata::Tracer;
using strata::TraceSpan;

std::string shared_dir() {
  if (const char* env = std::getenv("STRATA_SHARED")) return env;
  for (const char* candidate : {"shared", "../shared", "../../shared", "../../../shared"}) {
    if (std::filesystem::exists(std::string(candidate) + "/models")) return candidate;
  }
  return "../shared";
}

void BM_SpanOff(benchmark::State& state) {
  Tracer* tracer = nullptr;
  benchmark::DoNotOptimize(tracer);
  for (auto _ : state) {
    TraceSpan span(tracer, "layer", kTraceForward);
    span.arg("layer", 1);
  }
}
BENCHMARK(BM_SpanOff);

void BM_SpanOn(benchmark::State& state) {
  strata::TracerOptions o;
  o.initial_events = o.max_events = size_t{1} << 21;
  Tracer tracer(o);
  for (auto _ : state) {
    TraceSpan span(&tracer, "attention", kTraceForward);
  }
  state.counters["dropped"] = static_cast<double>(tracer.dropped());
}
BENCHMARK(BM_SpanOn)->Iterations(1 << 20);

struct TinyModel {
  std::unique_ptr<strata::Model> model;
  std::unique_ptr<strata::ThreadPool> pool;
  TinyModel() {
    const std::string models = shared_dir() + "/models/";
    strata::Llama2cConvertOptions o;
    o.checkpoint_path = models + "aidreams260K.bin";
    o.tokenizer_path = models + "aidreams260K.tok512.bin";
    o.output_path = (std::filesystem::temp_directory_path() / "strata_trace_bench.gguf").string();
    strata::convert_llama2c(o);
    model = strata::Model::load(o.output_path);
    pool = std::make_unique<strata::ThreadPool>(1);
  }
};

TinyModel& tiny() {
  static TinyModel m;
  return m;
}

// One engine step (a decode token) per iteration; the request restarts when its context
// fills.
void BM_DecodeTiny(benchmark::State& state) {
  auto& m = tiny();
  Tracer tracer;
  m.model->set_tracer(state.range(0) ? &tracer : nullptr);
  strata::EngineConfig config;
  config.prefix_cache = false;
  config.scheduler.max_seqs = 1;
  strata::EngineCore engine(*m.model, *m.pool, config);
  strata::RequestOptions o;
  o.sampling.temperature = 0.0f;
  o.stop.max_tokens = 1 << 30;
  o.stop.ignore_eos = true;
  for (auto _ : state) {
    if (!engine.has_work()) engine.add_request({1}, o);
    benchmark::DoNotOptimize(engine.step().data());
  }
  m.model->set_tracer(nullptr);
  state.counters["events"] = static_cast<double>(tracer.size());
}
// 4000 tokens x 44 events stay within the tracer's initial buffer (no growth while timed).
BENCHMARK(BM_DecodeTiny)
    ->ArgName("traced")
    ->Arg(0)
    ->Arg(1)
    ->Arg(0)
    ->Arg(1)
    ->Iterations(4000)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);

}  // namespace

BENCHMARK_MAIN();
