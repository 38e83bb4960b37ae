// EngineCore behaviour beyond equivalence: aborts free everything, cache salts isolate,
// stop conditions, logprobs, and the thread-safe EngineLoop front.
#include <gtest/gtest.h>

#include <cmath>
#include <future>

#include "engine/engine_loop.h"
#include "serving/engine_test_util.h"
#include "support/tiny_models.h"

namespace strata {
namespace {

EngineConfig roomy() {
  EngineConfig c;
  c.kv_cache_tokens = 4096;
  c.scheduler.prefill_chunk = 8;
  return c;
}

std::vector<int32_t> prompt_of(int n, int32_t salt = 0) {
  std::vector<int32_t> p = {1};
  for (int i = 1; i < n; ++i) p.push_back(3 + (i * 37 + salt) % 500);
  return p;
}

RequestOptions greedy(int max_tokens) {
  RequestOptions o;
  o.sampling.temperature = 0;
  o.stop.max_tokens = max_tokens;
  o.stop.ignore_eos = true;
  return o;
}

TEST(EngineCore, AbortDuringPrefillAndDecodeFreesEverything) {
  auto model = Model::load(testing::aidreams_gguf());
  ThreadPool pool(2);
  EngineCore engine(*model, pool, roomy());
  const RequestId a =
      engine.add_request(prompt_of(60), greedy(20));  // 8-token chunks: prefilling for a while
  const RequestId b = engine.add_request(prompt_of(5, 1), greedy(50));
  engine.step();
  engine.step();
  EXPECT_GT(engine.metrics().kv.used, 0);
  ASSERT_TRUE(engine.abort(a));  // mid-prefill
  bool a_aborted = false;
  for (const auto& o : engine.step()) {
    if (o.id == a) a_aborted = o.finish == FinishReason::kAbort;
  }
  EXPECT_TRUE(a_aborted);
  for (int i = 0; i < 5; ++i) engine.step();  // b decodes
  ASSERT_TRUE(engine.abort(b));               // mid-decode
  bool b_aborted = false;
  for (const auto& o : engine.step()) {
    if (o.id == b) b_aborted = o.finish == FinishReason::kAbort;
  }
  EXPECT_TRUE(b_aborted);
  testing::expect_no_leaks(engine);
  EXPECT_FALSE(engine.abort(b));
}

// A forward pass that throws (here: a weight matrix moved off its alignment, as a hostile
// file once did) ends the requests of its batch with kError and the reason; the engine
// then serves the next request exactly as if nothing had happened.
TEST(EngineCore, AFailedForwardPassEndsItsBatchAndTheEngineGoesOn) {
  auto model = Model::load(testing::aidreams_gguf());
  ThreadPool pool(2);
  std::vector<int32_t> expected;
  {
    EngineConfig c = roomy();
    c.prefix_cache = false;
    EngineCore engine(*model, pool, c);
    engine.add_request(prompt_of(20), greedy(8));
    while (engine.has_work()) {
      for (const auto& o : engine.step())
        expected.insert(expected.end(), o.new_tokens.begin(), o.new_tokens.end());
    }
  }
  EngineCore engine(*model, pool, roomy());
  auto& wq = const_cast<ModelWeights&>(model->weights()).layers[0].wq;
  const void* good = wq.data;
  wq.data = static_cast<const uint8_t*>(good) + 1;
  const RequestId a = engine.add_request(prompt_of(20), greedy(8));
  const RequestId b = engine.add_request(prompt_of(7, 3), greedy(8));
  int failed = 0;
  for (const auto& o : engine.step()) {
    EXPECT_TRUE(o.id == a || o.id == b);
    EXPECT_EQ(o.finish, FinishReason::kError);
    EXPECT_NE(o.error.find("aligned"), std::string::npos) << o.error;
    ++failed;
  }
  EXPECT_EQ(failed, 2);
  EXPECT_EQ(engine.metrics().step_failures, 1);
  testing::expect_no_leaks(engine);
  wq.data = good;
  engine.add_request(prompt_of(20), greedy(8));
  std::vector<int32_t> got;
  while (engine.has_work()) {
    for (const auto& o : engine.step())
      got.insert(got.end(), o.new_tokens.begin(), o.new_tokens.end());
  }
  EXPECT_EQ(got, expected);
  testing::expect_no_leaks(engine);
}

TEST(EngineCore, CacheSaltIsolatesIdenticalPrompts) {
  auto model = Model::load(testing::aidreams_gguf());
  ThreadPool pool(2);
  EngineCore engine(*model, pool, roomy());
  auto run_one = [&](const std::string& salt) {
    auto o = greedy(4);
    o.cache_salt = salt;
    return generate(engine, nullptr, {{"x", prompt_of(70), o}})[0];
  };
  EXPECT_EQ(run_one("alice").n_cached_prompt, 0);
  EXPECT_EQ(run_one("bob").n_cached_prompt, 0);  // same prompt, other salt: nothing shared
  EXPECT_EQ(run_one("alice").n_cached_prompt,
            64);  // same salt: all full blocks before the last token
  EXPECT_EQ(run_one("").n_cached_prompt, 0);
  testing::expect_no_leaks(engine);
}

TEST(EngineCore, MultiTurnChatReusesThePreviousTurn) {
  auto model = Model::load(testing::aidreams_gguf());
  ThreadPool pool(2);
  EngineCore engine(*model, pool, roomy());
  auto turn1 = prompt_of(40);
  const auto r1 = generate(engine, nullptr, {{"t1", turn1, greedy(10)}})[0];
  auto turn2 = turn1;
  turn2.insert(turn2.end(), r1.tokens.begin(), r1.tokens.end());
  for (int i = 0; i < 12; ++i) turn2.push_back(300 + i);
  const auto r2 = generate(engine, nullptr, {{"t2", turn2, greedy(5)}})[0];
  EXPECT_EQ(r2.n_cached_prompt, 48);  // turn 1's prompt and output, whole blocks only
}

TEST(EngineCore, StopTokensMinTokensAndLength) {
  auto model = Model::load(testing::aidreams_gguf());
  ThreadPool pool(2);
  EngineCore engine(*model, pool, roomy());
  const auto free_run = generate(engine, nullptr, {{"a", prompt_of(7), greedy(12)}})[0];
  ASSERT_EQ(free_run.tokens.size(), 12u);
  EXPECT_EQ(free_run.finish, FinishReason::kLength);
  // Stop at the 4th generated token.
  auto o = greedy(12);
  o.stop.stop_token_ids = {free_run.tokens[3]};
  o.stop.ignore_eos = false;
  const auto stopped = generate(engine, nullptr, {{"b", prompt_of(7), o}})[0];
  const auto first = std::find(free_run.tokens.begin(), free_run.tokens.end(), free_run.tokens[3]);
  EXPECT_EQ(stopped.tokens, std::vector<int32_t>(free_run.tokens.begin(), first));
  EXPECT_EQ(stopped.finish, FinishReason::kStop);
  // min_tokens suppresses the stop token until enough tokens exist.
  o.stop.min_tokens = 8;
  const auto min_run = generate(engine, nullptr, {{"c", prompt_of(7), o}})[0];
  EXPECT_GE(min_run.tokens.size(), 8u);
  EXPECT_EQ(std::count(min_run.tokens.begin(), min_run.tokens.begin() + 8, free_run.tokens[3]), 0);
  testing::expect_no_leaks(engine);
}

TEST(EngineCore, LogprobsAreNormalisedAndMatchTheChosenToken) {
  auto model = Model::load(testing::aidreams_gguf());
  ThreadPool pool(1);
  EngineCore engine(*model, pool, roomy());
  auto o = greedy(3);
  o.logprobs = 5;
  engine.add_request(prompt_of(9), o);
  int seen = 0;
  while (engine.has_work()) {
    for (const auto& out : engine.step()) {
      for (const auto& lp : out.logprobs) {
        ASSERT_EQ(lp.top.size(), 5u);
        EXPECT_EQ(lp.top[0].first, lp.token);  // greedy picks the most likely token
        EXPECT_FLOAT_EQ(lp.top[0].second, lp.logprob);
        EXPECT_LE(lp.logprob, 0.0f);
        EXPECT_GE(lp.top[0].second, lp.top[4].second);
        ++seen;
      }
    }
  }
  EXPECT_EQ(seen, 3);
}

TEST(EngineCore, RejectsInvalidRequests) {
  auto model = Model::load(testing::aidreams_gguf());
  ThreadPool pool(1);
  EngineCore engine(*model, pool, roomy());
  EXPECT_THROW(engine.add_request({}, greedy(1)), Error);
  EXPECT_THROW(engine.add_request({1, 99999}, greedy(1)), Error);
  EXPECT_THROW(engine.add_request(prompt_of(128), greedy(1)),
               Error);  // fills the 128-token context
  auto bad = greedy(1);
  bad.sampling.top_p = 0;
  EXPECT_THROW(engine.add_request({1}, bad), Error);
  bad = greedy(-1);
  EXPECT_THROW(engine.add_request({1}, bad), Error);
  testing::expect_no_leaks(engine);
}

TEST(EngineLoop, ConcurrentSubmissionsMatchSequentialResults) {
  auto model = Model::load(testing::aidreams_gguf());
  ThreadPool pool(2);
  std::vector<std::vector<int32_t>> want;
  {
    EngineCore engine(*model, pool, roomy());
    for (int i = 0; i < 16; ++i)
      want.push_back(generate(engine, nullptr, {{"", prompt_of(5 + i, i), greedy(10)}})[0].tokens);
  }
  EngineCore engine(*model, pool, roomy());
  EngineLoop loop(engine);
  std::vector<std::promise<std::vector<int32_t>>> results(16);
  std::vector<std::thread> clients;
  for (int i = 0; i < 16; ++i) {
    clients.emplace_back([&, i] {
      auto tokens = std::make_shared<std::vector<int32_t>>();
      loop.submit(prompt_of(5 + i, i), greedy(10), [&, i, tokens](const RequestOutput& o) {
        tokens->insert(tokens->end(), o.new_tokens.begin(), o.new_tokens.end());
        if (o.finished()) results[static_cast<size_t>(i)].set_value(*tokens);
      });
    });
  }
  for (auto& c : clients) c.join();
  for (int i = 0; i < 16; ++i)
    EXPECT_EQ(results[static_cast<size_t>(i)].get_future().get(), want[static_cast<size_t>(i)]);
  EXPECT_TRUE(loop.wait_idle(5));
  EXPECT_EQ(loop.metrics().kv.used, 0);
}

TEST(EngineCore, ContextLongerThanTheModelsTrainedOneIsKept) {
  // As llama.cpp's -c: an explicit context past the trained length is honoured (strata
  // serve warns), not clipped to it; 0 means the model's own.
  auto model = Model::load(testing::aidreams_gguf());
  ThreadPool pool(1);
  const int64_t trained = model->config().context_length;
  EngineConfig c = roomy();
  c.kv_cache_tokens = 2 * (trained + 64);
  EXPECT_EQ(EngineCore(*model, pool, c).context_length(), trained);
  c.context_length = trained + 64;
  EngineCore engine(*model, pool, c);
  EXPECT_EQ(engine.context_length(), trained + 64);
  // A prompt past the trained length runs to its length limit.
  const auto run =
      generate(engine, nullptr, {{"long", prompt_of(static_cast<int>(trained) + 8), greedy(4)}})[0];
  EXPECT_EQ(run.tokens.size(), 4u);
  EXPECT_EQ(run.finish, FinishReason::kLength);
  testing::expect_no_leaks(engine);
}

TEST(EngineLoop, AbortFromAnotherThreadEndsTheRequest) {
  auto model = Model::load(testing::aidreams_gguf());
  ThreadPool pool(1);
  EngineCore engine(*model, pool, roomy());
  EngineLoop loop(engine);
  std::promise<FinishReason> done;
  std::atomic<int> tokens{0};
  std::atomic<bool> abort_sent{false};
  const RequestId id = loop.submit(prompt_of(5), greedy(100), [&](const RequestOutput& o) {
    tokens += static_cast<int>(o.new_tokens.size());
    if (o.finished()) done.set_value(o.finish);
    // Hold the engine thread after the third token until the abort is queued, so the
    // request cannot run to its length limit first on a loaded machine.
    while (tokens >= 3 && !abort_sent) std::this_thread::yield();
  });
  while (tokens < 3) std::this_thread::yield();
  loop.abort(id);
  abort_sent = true;
  EXPECT_EQ(done.get_future().get(), FinishReason::kAbort);
  EXPECT_TRUE(loop.wait_idle(5));
  EXPECT_EQ(loop.metrics().kv.used, 0);
  EXPECT_EQ(loop.metrics().running, 0);
  EXPECT_THROW(loop.submit({}, greedy(1), [](const RequestOutput&) {}), Error);
}

}  // namespace
}  // namespace strata
