// EngineCore's disaggregation seam (engine/kv_transfer.cpp): blocks exported by one
// engine and imported by another give the same greedy tokens as one engine; imports are
// all-or-nothing, skip blocks held already, and refuse another model's message.
#include <gtest/gtest.h>

#include "core/error.h"
#include "disagg/kv_format.h"
#include "engine/engine_core.h"
#include "engine/offline.h"
#include "support/tiny_models.h"

namespace strata {
namespace {

EngineConfig config(int64_t kv_tokens = 2048) {
  EngineConfig c;
  c.kv_cache_tokens = kv_tokens;
  c.kv_type = DType::F16;
  return c;
}

std::vector<int32_t> prompt_of(int n, int32_t salt = 0) {
  std::vector<int32_t> p = {1};
  for (int i = 1; i < n; ++i) p.push_back(3 + (i * 37 + salt) % 500);
  return p;
}

RequestOptions greedy(int max_tokens, const std::string& salt = "") {
  RequestOptions o;
  o.sampling.temperature = 0;
  o.stop.max_tokens = max_tokens;
  o.stop.ignore_eos = true;
  o.cache_salt = salt;
  return o;
}

OfflineResult run_one(EngineCore& engine, const std::vector<int32_t>& prompt,
                      const RequestOptions& o) {
  return generate(engine, nullptr, {{"r", prompt, o}})[0];
}

struct Pair {
  std::unique_ptr<Model> model = Model::load(testing::aidreams_gguf());
  ThreadPool pool{1};
};

TEST(KvTransfer, ExportImportGivesTheSameGreedyTokens) {
  Pair p;
  EngineCore reference(*p.model, p.pool, config());
  EngineCore prefill(*p.model, p.pool, config());
  EngineCore decode(*p.model, p.pool, config());
  for (const std::string salt : {"", "tenant-a"}) {
    const auto prompt = prompt_of(75, static_cast<int32_t>(salt.size()));
    const OfflineResult want = run_one(reference, prompt, greedy(20, salt));

    run_one(prefill, prompt, greedy(1, salt));  // the prefill replica's prefill
    const disagg::KvMessage m = prefill.export_prompt_blocks(prompt, salt);
    ASSERT_EQ(m.keys.size(), 75u / 16);
    EXPECT_EQ(m.payload.size(), m.keys.size() * prefill.kv_block_bytes());
    // Through the wire format, as the transport carries it.
    const disagg::KvMessage wire = disagg::decode_kv_message(disagg::encode_kv_message(m));
    const int32_t cached_before = decode.metrics().kv.cached;
    const auto r = decode.import_blocks(wire);
    EXPECT_EQ(r.imported, 4);
    EXPECT_EQ(r.skipped, 0);
    EXPECT_EQ(decode.metrics().kv.used, 0);  // cached, not held
    EXPECT_EQ(decode.metrics().kv.cached, cached_before + 4);

    const OfflineResult got = run_one(decode, prompt, greedy(20, salt));
    EXPECT_EQ(got.n_cached_prompt, 64);  // the imported blocks were hit
    EXPECT_EQ(got.tokens, want.tokens);
    // A second import of the same prompt skips what is held.
    const auto again = decode.import_blocks(wire);
    EXPECT_EQ(again.imported, 0);
    EXPECT_EQ(again.skipped, 4);
  }
}

TEST(KvTransfer, ExportStopsAtTheFirstBlockNotCached) {
  Pair p;
  EngineCore engine(*p.model, p.pool, config());
  EXPECT_TRUE(engine.export_prompt_blocks(prompt_of(70), "").keys.empty());
  run_one(engine, prompt_of(40), greedy(1));  // 2 full blocks cached
  auto longer = prompt_of(40);
  const auto tail = prompt_of(70, 9);
  longer.insert(longer.end(), tail.begin(), tail.begin() + 30);
  EXPECT_EQ(engine.export_prompt_blocks(longer, "").keys.size(), 2u);
  EXPECT_TRUE(engine.export_prompt_blocks(prompt_of(40), "other salt").keys.empty());
}

TEST(KvTransfer, ImportIsAllOrNothingWhenThePoolIsTooSmall) {
  Pair p;
  EngineCore prefill(*p.model, p.pool, config());
  EngineCore small(*p.model, p.pool, config(64));  // 4 blocks
  const auto prompt = prompt_of(100);              // 6 full blocks
  run_one(prefill, prompt, greedy(1));
  const disagg::KvMessage m = prefill.export_prompt_blocks(prompt, "");
  ASSERT_EQ(m.keys.size(), 6u);
  try {
    small.import_blocks(m);
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nothing imported"), std::string::npos) << e.what();
  }
  const auto u = small.metrics().kv;
  EXPECT_EQ(u.free, u.n_blocks);  // nothing taken, nothing registered
  EXPECT_EQ(u.cached, 0);
  // It still serves normally.
  const auto short_prompt = prompt_of(20);
  EXPECT_EQ(run_one(small, short_prompt, greedy(3)).tokens.size(), 3u);
}

TEST(KvTransfer, ImportDoesNotEvictHeldLinksOfTheChain) {
  Pair p;
  EngineCore prefill(*p.model, p.pool, config());
  EngineCore decode(*p.model, p.pool, config(128));  // 8 blocks
  const auto prompt = prompt_of(97);                 // 6 full blocks
  run_one(prefill, prompt, greedy(1));
  const auto m = prefill.export_prompt_blocks(prompt, "");
  ASSERT_EQ(m.keys.size(), 6u);
  // The decode engine holds the prompt's first 2 blocks (least recently used), then 4
  // newer unrelated ones: importing the other 4 must evict unrelated blocks, not the 2
  // links the chain starts with.
  disagg::KvMessage head = m;
  head.keys.resize(2);
  head.tokens.resize(2 * 16);
  head.payload.resize(2 * m.block_payload_bytes());
  ASSERT_EQ(decode.import_blocks(head).imported, 2);
  run_one(decode, prompt_of(65, 5), greedy(1));
  ASSERT_EQ(decode.metrics().kv.cached, 6);
  const auto r = decode.import_blocks(m);
  EXPECT_EQ(r.imported, 4);
  EXPECT_EQ(r.skipped, 2);
  EXPECT_EQ(run_one(decode, prompt, greedy(2)).n_cached_prompt, 96);
}

TEST(KvTransfer, RefusesAnotherModelsMessage) {
  Pair p;
  auto gqa = Model::load(testing::gqa_gguf());
  EngineCore prefill(*p.model, p.pool, config());
  EngineCore other(*gqa, p.pool, config());
  const auto prompt = prompt_of(40);
  run_one(prefill, prompt, greedy(1));
  disagg::KvMessage m = prefill.export_prompt_blocks(prompt, "");
  ASSERT_EQ(m.keys.size(), 2u);
  EXPECT_THROW(other.import_blocks(m), Error);
  // A forged fingerprint still fails: the keys are recomputed with the receiver's id
  // (or, first, the layer table differs).
  m.model_fingerprint = other.model_fingerprint();
  EXPECT_THROW(other.import_blocks(m), Error);
  // Same model, other KV element type: the layer table differs.
  EngineConfig f32 = config();
  f32.kv_type = DType::F32;
  EngineCore wide(*p.model, p.pool, f32);
  EXPECT_THROW(wide.import_blocks(prefill.export_prompt_blocks(prompt, "")), Error);
  EXPECT_EQ(other.metrics().kv.cached, 0);
  EXPECT_EQ(wide.metrics().kv.cached, 0);
}

TEST(KvTransfer, RefusesStreamingHeads) {
  Pair p;
  EngineConfig c = config();
  const auto& mc = p.model->config();
  c.head_modes.n_layers = mc.n_layers;
  c.head_modes.n_kv_heads = mc.n_kv_heads;
  c.head_modes.streaming.assign(static_cast<size_t>(mc.n_layers * mc.n_kv_heads), false);
  c.head_modes.streaming[0] = true;
  c.head_modes.sink = 16;
  c.head_modes.window = 32;
  EngineCore sparse(*p.model, p.pool, c);
  EXPECT_THROW(sparse.export_prompt_blocks(prompt_of(40), ""), Error);
  EngineCore dense(*p.model, p.pool, config());
  run_one(dense, prompt_of(40), greedy(1));
  EXPECT_THROW(sparse.import_blocks(dense.export_prompt_blocks(prompt_of(40), "")), Error);
}

}  // namespace
}  // namespace strata
