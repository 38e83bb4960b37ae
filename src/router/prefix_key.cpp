#include "router/prefix_key.h"

#include <algorithm>

#include "core/error.h"
#include "engine/engine_core.h"
#include "gguf/gguf.h"
#include "server/prompt_builder.h"
#include "server/request_parse.h"

namespace strata::router {

struct PrefixKeyer::Impl {
  std::unique_ptr<server::PromptBuilder> prompts;
};

PrefixKeyer::PrefixKeyer(const PrefixKeyConfig& config)
    : impl_(std::make_unique<Impl>()), config_(config) {
  if (config.block_size <= 0 || config.block_size > 4096)
    throw Error("--block-size: must be in [1, 4096]");
  if (config.prefix_blocks <= 0) throw Error("--prefix-blocks: must be positive");
  // mmap: only the metadata and tensor table are touched, never the weights' pages.
  const gguf::GgufFile file = gguf::GgufFile::open(config.model_path);
  model_id_ = model_identity(file);
  impl_->prompts = std::make_unique<server::PromptBuilder>(
      Tokenizer::from_gguf(file), file.get_string("tokenizer.chat_template", ""));
}

PrefixKeyer::~PrefixKeyer() = default;

std::vector<int32_t> PrefixKeyer::prompt_ids(const nlohmann::json& body, bool chat) const {
  server::ParseLimits limits;
  limits.context_length = 1 << 30;
  const server::GenerationRequest gr = server::parse_generation_request(
      body, chat ? server::ApiKind::kChat : server::ApiKind::kCompletion, limits);
  if (chat) {
    const bool add_gen = body.value("add_generation_prompt", true);
    return impl_->prompts->chat_prompt(gr.messages, add_gen).ids;
  }
  if (gr.prompts.empty()) throw Error("prompt: empty");
  return impl_->prompts->completion_prompts({gr.prompts.front()}, gr.parse_special).front().ids;
}

std::vector<BlockKey> PrefixKeyer::block_keys(const std::vector<int32_t>& ids,
                                              const std::string& salt) const {
  const auto bs = static_cast<size_t>(config_.block_size);
  std::vector<BlockKey> keys;
  for (size_t i = 0; (i + 1) * bs <= ids.size(); ++i) {
    keys.push_back(chain_block_key(keys.empty() ? std::nullopt : std::optional(keys.back()),
                                   std::span(ids).subspan(i * bs, bs), salt, model_id_));
  }
  return keys;
}

std::optional<PrefixKey> PrefixKeyer::key(const nlohmann::json& body, bool chat) const {
  std::vector<int32_t> ids = prompt_ids(body, chat);
  const size_t bs = static_cast<size_t>(config_.block_size);
  // The engine reuses only blocks ending before the prompt's last token (KvManager::
  // match_prefix), so those are the blocks a key may cover.
  const size_t usable = ids.empty() ? 0 : ids.size() - 1;
  ids.resize(std::min(usable, bs * static_cast<size_t>(config_.prefix_blocks)));
  const std::string salt = body.value("cache_salt", std::string());
  const std::vector<BlockKey> keys = block_keys(ids, salt);
  if (keys.empty()) return std::nullopt;
  return PrefixKey{keys.back(), static_cast<int32_t>(keys.size())};
}

}  // namespace strata::router
