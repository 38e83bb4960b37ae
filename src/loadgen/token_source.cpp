#include "loadgen/token_source.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <numeric>

#include "core/error.h"
#include "gguf/gguf.h"
#include "loadgen/http_client.h"
#include "tokenizer/tokenizer.h"

namespace strata::loadgen {
namespace {

using nlohmann::json;

class LocalTokenSource final : public TokenSource {
 public:
  explicit LocalTokenSource(const std::string& path)
      : tok_(Tokenizer::from_gguf(gguf::GgufFile::open(path))) {}

  int32_t n_vocab() override { return tok_.n_vocab(); }
  std::vector<int32_t> encode(const std::string& text) override {
    return tok_.encode(text, /*add_bos=*/false, /*parse_special=*/false);
  }
  std::string decode(const std::vector<int32_t>& ids) override { return tok_.decode(ids); }
  std::vector<int32_t> candidate_ids(std::mt19937_64&, size_t) override {
    std::vector<int32_t> out;
    for (int32_t id = 0; id < tok_.n_vocab(); ++id) {
      if (tok_.token_type(id) == TokenType::kNormal) out.push_back(id);
    }
    return out;
  }

 private:
  Tokenizer tok_;
};

class RemoteTokenSource final : public TokenSource {
 public:
  explicit RemoteTokenSource(HttpClient& client) : client_(client) {}

  int32_t n_vocab() override {
    if (n_vocab_ > 0) return n_vocab_;
    if (!valid_id(0)) throw Error("the server's /detokenize refuses token id 0");
    int64_t lo = 0, hi = 1024;  // lo valid, hi invalid
    while (valid_id(hi)) {
      lo = hi;
      hi *= 2;
      if (hi > (int64_t{1} << 24)) throw Error("the server's /detokenize accepts any token id");
    }
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      (valid_id(mid) ? lo : hi) = mid;
    }
    n_vocab_ = static_cast<int32_t>(hi);
    return n_vocab_;
  }

  std::vector<int32_t> encode(const std::string& text) override {
    const json r = call("/tokenize", {{"prompt", text}, {"add_special_tokens", false}});
    return r.at("tokens").get<std::vector<int32_t>>();
  }

  std::string decode(const std::vector<int32_t>& ids) override {
    return call("/detokenize", {{"tokens", ids}}).at("prompt").get<std::string>();
  }

  std::vector<int32_t> candidate_ids(std::mt19937_64& rng, size_t max_remote) override {
    std::vector<int32_t> all(static_cast<size_t>(n_vocab()));
    std::iota(all.begin(), all.end(), 0);
    std::shuffle(all.begin(), all.end(), rng);
    all.resize(std::min(all.size(), max_remote));
    std::sort(all.begin(), all.end());
    return all;
  }

 private:
  bool valid_id(int64_t id) {
    const HttpResponse r = client_.post_json("/detokenize", json{{"tokens", {id}}}.dump());
    if (r.status == 200) return true;
    if (r.status == 400) return false;
    throw Error("POST /detokenize: HTTP " + std::to_string(r.status) + ": " + r.body);
  }

  json call(const std::string& path, const json& body) {
    const HttpResponse r = client_.post_json(path, body.dump());
    if (r.status != 200) {
      throw Error("POST " + path + ": HTTP " + std::to_string(r.status) + ": " + r.body +
                  " (give --model-path to tokenize locally)");
    }
    try {
      return json::parse(r.body);
    } catch (const json::exception& e) {
      throw Error("POST " + path + ": invalid JSON in the response: " + e.what());
    }
  }

  HttpClient& client_;
  int32_t n_vocab_ = 0;
};

}  // namespace

std::unique_ptr<TokenSource> local_token_source(const std::string& gguf_path) {
  return std::make_unique<LocalTokenSource>(gguf_path);
}

std::unique_ptr<TokenSource> remote_token_source(HttpClient& client) {
  return std::make_unique<RemoteTokenSource>(client);
}

}  // namespace strata::loadgen
