// The router's prefix key equals the engine's: same model identity as plan_kv gives the
// KV manager, same prompt ids as the server's PromptBuilder, keys chained over the
// blocks the engine would reuse, and cache_salt separating them.
#include "router/prefix_key.h"

#include <gtest/gtest.h>

#include "engine/engine_core.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "server/prompt_builder.h"
#include "support/paths.h"
#include "support/tiny_models.h"

namespace strata::router {
namespace {

// The real tiny model from ../shared, converted once per process (a path on one
// developer's machine made this test skip everywhere else, CI included).
const std::string& tiny_model() {
  return strata::testing::aidreams_gguf();
}

TEST(PrefixKeyTest, MatchesTheEngineIdentityAndServerPrompt) {
  PrefixKeyer keyer({tiny_model(), 16, 4});
  auto model = Model::load(tiny_model(), {});
  const KvPlan plan = plan_kv(*model, EngineConfig{});
  EXPECT_EQ(keyer.model_id(), plan.manager.model_id);
  EXPECT_EQ(plan.manager.block_size, 16);

  server::PromptBuilder server_prompts(Tokenizer::from_gguf(model->file()),
                                       model->file().get_string("tokenizer.chat_template", ""));
  std::string doc;
  for (int i = 0; i < 40; ++i) doc += "Once upon a time there was a little dog. ";
  const nlohmann::json chat = {{"messages", {{{"role", "user"}, {"content", doc}}}}};
  const auto ids = keyer.prompt_ids(chat, true);
  EXPECT_EQ(ids, server_prompts.chat_prompt(chat["messages"]).ids);
  ASSERT_GT(ids.size(), 4u * 16 + 1);

  // The engine's chain (KvManager::match_prefix) over the first 4 blocks.
  std::optional<BlockKey> chain;
  for (int b = 0; b < 4; ++b)
    chain = chain_block_key(chain, std::span(ids).subspan(b * 16, 16), "", plan.manager.model_id);
  const auto k = keyer.key(chat, true);
  ASSERT_TRUE(k);
  EXPECT_EQ(k->blocks, 4);
  EXPECT_EQ(k->key, *chain);

  // Same document, different question after the key's blocks: same key.
  nlohmann::json chat2 = chat;
  chat2["messages"][0]["content"] = doc + " Who was it?";
  EXPECT_EQ(keyer.key(chat2, true)->key, k->key);
  // A salt changes it; so does a different document.
  nlohmann::json salted = chat;
  salted["cache_salt"] = "tenant-1";
  EXPECT_NE(keyer.key(salted, true)->key, k->key);
  nlohmann::json other = {{"messages", {{{"role", "user"}, {"content", "Bob " + doc}}}}};
  EXPECT_NE(keyer.key(other, true)->key, k->key);

  // Completions: the text prompt with BOS, as the server builds it.
  const nlohmann::json comp = {{"prompt", doc}};
  EXPECT_EQ(keyer.prompt_ids(comp, false), server_prompts.completion_prompts({doc}).front().ids);
  // Shorter than one reusable block: no key.
  EXPECT_FALSE(keyer.key({{"prompt", "Hi"}}, false));
}

}  // namespace
}  // namespace strata::router
