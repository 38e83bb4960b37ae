// The target model's tokenizer, as the dataset builder needs it: either strata's own
// tokenizer on the model's GGUF (--model-path), or the server's POST /tokenize and
// /detokenize. encode() adds no BOS and parses no special tokens; decode() skips
// special tokens.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace strata::loadgen {

class HttpClient;

class TokenSource {
 public:
  virtual ~TokenSource() = default;
  virtual int32_t n_vocab() = 0;
  virtual std::vector<int32_t> encode(const std::string& text) = 0;
  virtual std::string decode(const std::vector<int32_t>& ids) = 0;
  // Ids worth testing as plain word tokens: all normal tokens locally, a random
  // sample of at most `max_remote` ids from a server.
  virtual std::vector<int32_t> candidate_ids(std::mt19937_64& rng, size_t max_remote) = 0;
};

// strata's tokenizer from a GGUF file (model or vocabulary only).
std::unique_ptr<TokenSource> local_token_source(const std::string& gguf_path);

// The server's /tokenize and /detokenize through `client` (which must outlive it). The
// vocabulary size is found by bisection: /detokenize refuses ids past the vocabulary.
std::unique_ptr<TokenSource> remote_token_source(HttpClient& client);

}  // namespace strata::loadgen
