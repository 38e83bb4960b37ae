// The router's prefix key of a request, computed exactly as the engine's prefix cache
// keys blocks (kv/block_key.h, KvManager): the same tokenizer and chat template
// rendering as the server (server/prompt_builder.h), the same block size, the request's
// `cache_salt`, and the model identity hashed from the GGUF's tensor table (the weights
// are never read). The key is the chained key of the first `prefix_blocks` full blocks
// (fewer if the prompt has fewer): equal keys mean the request would hit the blocks a
// previous one registered on the same replica.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kv/block_key.h"

namespace strata::router {

struct PrefixKeyConfig {
  std::string model_path;
  int32_t block_size = 16;    // strata serve's --block-size (the engine's default)
  int32_t prefix_blocks = 8;  // leading blocks that form the key
};

struct PrefixKey {
  BlockKey key;        // chained key of the last block counted
  int32_t blocks = 0;  // how many full blocks it covers (>= 1)
  uint64_t route_hash() const { return key.lo; }
};

class PrefixKeyer {
 public:
  explicit PrefixKeyer(const PrefixKeyConfig& config);  // throws strata::Error
  ~PrefixKeyer();

  // The prompt token ids of a /v1/chat/completions (`chat`) or /v1/completions body, as
  // the server would build them (first prompt only). Throws on a malformed body.
  std::vector<int32_t> prompt_ids(const nlohmann::json& body, bool chat) const;
  // Keys of all full blocks of `ids` (the engine's chain), for tests and hit estimates.
  std::vector<BlockKey> block_keys(const std::vector<int32_t>& ids, const std::string& salt) const;
  // nullopt when the prompt has no full block (nothing cacheable to route by).
  std::optional<PrefixKey> key(const nlohmann::json& body, bool chat) const;

  uint64_t model_id() const { return model_id_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  PrefixKeyConfig config_;
  uint64_t model_id_ = 0;
};

}  // namespace strata::router
