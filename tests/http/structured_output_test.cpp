// Output programs rely on, over HTTP: prompt logprobs (echo + logprobs, max_tokens 0, as
// lm-evaluation-harness sends them) against a log-softmax of `strata logits`, through
// chunked prefill and a prefix-cache candidate; and grammar-constrained output
// (response_format json_schema / json_object, grammar) on a random-weight model, which
// validates every time where unconstrained output does not.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "grammar/schema_check.h"
#include "http/http_test_util.h"

namespace strata::testing {
namespace {

using nlohmann::json;

// log-softmax of row `row` of an [n][n_vocab] f32 file at token `tok` (double sums).
double log_softmax_at(const std::vector<float>& all, size_t n_vocab, size_t row, int32_t tok) {
  const float* x = all.data() + row * n_vocab;
  double mx = -INFINITY, sum = 0;
  for (size_t i = 0; i < n_vocab; ++i) mx = std::max(mx, static_cast<double>(x[i]));
  for (size_t i = 0; i < n_vocab; ++i) sum += std::exp(x[i] - mx);
  return x[tok] - mx - std::log(sum);
}

std::vector<float> strata_logits(const std::string& model, const std::vector<int32_t>& ids) {
  std::string tokens;
  for (int32_t t : ids) tokens += std::to_string(t) + " ";
  const std::string out = scratch_dir() + "/prompt-logprobs-ref.f32";
  const auto r =
      run_command(shell_quote(strata_bin()) + " logits -t 1 -m " + shell_quote(model) +
                  " --tokens " + shell_quote(tokens) + " -o " + shell_quote(out) + " 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  std::ifstream in(out, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
  std::vector<float> f(bytes.size() / sizeof(float));
  std::memcpy(f.data(), bytes.data(), f.size() * sizeof(float));
  return f;
}

TEST(PromptLogprobs, EqualLogSoftmaxOfStrataLogitsThroughChunksAndTheCache) {
  const std::string& model = aidreams_gguf();
  // Chunks of 8 tokens: the 60-token prompt takes 8 prefill steps.
  ServerProcess server(model, serve_args({"--prefill-chunk", "8"}));
  std::vector<int32_t> ids;
  for (int i = 0; i < 60; ++i) ids.push_back(1 + (i * 37) % 500);
  const std::vector<float> ref = strata_logits(model, ids);
  const size_t n_vocab = ref.size() / ids.size();
  ASSERT_EQ(n_vocab * ids.size(), ref.size());

  auto check = [&](const json& body, const char* what) {
    const auto r = http_post(server.port(), "/v1/completions", body);
    ASSERT_EQ(r.status, 200) << r.body;
    const json j = r.json();
    const json& lp = j["choices"][0]["logprobs"];
    ASSERT_EQ(lp["token_logprobs"].size(), ids.size()) << what;
    EXPECT_TRUE(lp["token_logprobs"][0].is_null());
    EXPECT_TRUE(lp["top_logprobs"][0].is_null());
    for (size_t i = 1; i < ids.size(); ++i) {
      const double want = log_softmax_at(ref, n_vocab, i - 1, ids[i]);
      EXPECT_NEAR(lp["token_logprobs"][i].get<double>(), want, 1e-4) << what << " token " << i;
      // The top entry is the row's most likely token, at least as likely as the prompt's.
      ASSERT_EQ(lp["top_logprobs"][i].size(), 2u);
    }
    EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
    EXPECT_EQ(j["usage"]["completion_tokens"], 0);
    // The request computes its whole prompt: no prefix-cache hit can skip its logprobs.
    EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 0) << what;
  };
  const json echo = {{"prompt", ids}, {"max_tokens", 0}, {"echo", true}, {"logprobs", 2}};
  check(echo, "first");
  // The same prompt again, and after a plain request that left its blocks cached.
  check(echo, "again");
  const auto plain = http_post(server.port(), "/v1/completions",
                               json{{"prompt", ids}, {"max_tokens", 1}, {"temperature", 0}});
  ASSERT_EQ(plain.status, 200);
  const auto hit = http_post(server.port(), "/v1/completions",
                             json{{"prompt", ids}, {"max_tokens", 1}, {"temperature", 0}});
  EXPECT_GT(hit.json()["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 0)
      << "the prompt is in the prefix cache";
  check(echo, "cached");
  // With generated tokens the prompt's entries come first, then the generated ones.
  auto gen = echo;
  gen["max_tokens"] = 3;
  gen["temperature"] = 0;
  gen["ignore_eos"] = true;
  const json g = http_post(server.port(), "/v1/completions", gen).json();
  EXPECT_EQ(g["choices"][0]["logprobs"]["token_logprobs"].size(), ids.size() + 3);
}

const json kSchema = json::parse(R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "minLength": 1, "maxLength": 12},
    "age": {"type": "integer"},
    "pet": {"enum": ["cat", "dog"]},
    "tags": {"type": "array", "items": {"type": "string", "maxLength": 6}, "maxItems": 3},
    "ok": {"type": "boolean"}
  },
  "required": ["name", "age", "pet"],
  "additionalProperties": false
})");

class Constrained : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new ServerProcess(slow_gguf(), serve_args()); }
  static void TearDownTestSuite() { delete server_; }
  static json chat(json body) {
    body["messages"] = json::array({{{"role", "user"}, {"content", "Describe a person."}}});
    const auto r = http_post(server_->port(), "/v1/chat/completions", body);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json();
  }
  static ServerProcess* server_;
};
ServerProcess* Constrained::server_ = nullptr;

TEST_F(Constrained, JsonSchemaAlwaysValidatesUnconstrainedDoesNot) {
  const json rf = {{"type", "json_schema"},
                   {"json_schema", {{"name", "person"}, {"schema", kSchema}, {"strict", true}}}};
  int valid = 0, valid_free = 0;
  // n = 10 choices per request, each seeded (seed + choice): 20 samples each way.
  for (int seed : {1, 2}) {
    const json r = chat({{"max_tokens", 200}, {"seed", seed}, {"n", 10}, {"response_format", rf}});
    for (const json& c : r["choices"]) {
      std::string why;
      const std::string text = c["message"]["content"];
      if (grammar::schema_check::valid(text, kSchema, why)) {
        ++valid;
      } else {
        ADD_FAILURE() << text << ": " << why;
      }
      EXPECT_EQ(c["finish_reason"], "stop") << text;
    }
    const json free = chat({{"max_tokens", 60}, {"seed", seed}, {"n", 10}});
    for (const json& c : free["choices"]) {
      std::string why;
      valid_free += grammar::schema_check::valid(c["message"]["content"], kSchema, why);
    }
  }
  EXPECT_EQ(valid, 20);
  EXPECT_EQ(valid_free, 0);
}

TEST_F(Constrained, LogprobsAreThoseOfTheMaskedDistribution) {
  const json r = chat({{"max_tokens", 200},
                       {"seed", 3},
                       {"logprobs", true},
                       {"top_logprobs", 20},
                       {"grammar", "root ::= (\"yes\" | \"no\") \"!\""}});
  const std::string text = r["choices"][0]["message"]["content"];
  EXPECT_TRUE(text == "yes!" || text == "no!") << text;
  for (const json& t : r["choices"][0]["logprobs"]["content"]) {
    EXPECT_LE(t["logprob"].get<double>(), 0.0);
    double mass = 0;
    for (const json& top : t["top_logprobs"]) {
      if (top["logprob"].is_number()) mass += std::exp(top["logprob"].get<double>());
    }
    // Only a handful of tokens (pieces and byte tokens of "yes", "no", "!") are allowed at
    // each step: the top 20 hold all the mass.
    EXPECT_NEAR(mass, 1.0, 1e-3) << t.dump();
  }
}

TEST_F(Constrained, JsonObjectAndGrammarFieldErrors) {
  auto status = [](const json& body) {
    json b = body;
    b["messages"] = json::array({{{"role", "user"}, {"content", "x"}}});
    const auto r = http_post(server_->port(), "/v1/chat/completions", b);
    return std::make_pair(r.status, r.body);
  };
  auto [s1, b1] = status({{"grammar", "root ::= x"}});
  EXPECT_EQ(s1, 400);
  EXPECT_NE(b1.find("'x' is used but not defined"), std::string::npos) << b1;
  auto [s2, b2] = status(
      {{"response_format",
        {{"type", "json_schema"},
         {"json_schema", {{"name", "x"}, {"schema", {{"type", "string"}, {"format", "date"}}}}}}}});
  EXPECT_EQ(s2, 400);
  EXPECT_NE(b2.find("unsupported keyword 'format'"), std::string::npos) << b2;
  // 10,000 properties: refused at once, naming the limit.
  json props = json::object();
  for (int i = 0; i < 10000; ++i) props["p" + std::to_string(i)] = {{"type", "integer"}};
  auto [s3, b3] =
      status({{"response_format",
               {{"type", "json_schema"},
                {"json_schema",
                 {{"name", "x"}, {"schema", {{"type", "object"}, {"properties", props}}}}}}}});
  EXPECT_EQ(s3, 400);
  EXPECT_NE(b3.find("at most 1000 per object"), std::string::npos) << b3;
  // A grammar nested beyond the limit, and a huge repetition.
  auto [s4, b4] = status(
      {{"grammar", "root ::= " + std::string(5000, '(') + "\"a\"" + std::string(5000, ')')}});
  EXPECT_EQ(s4, 400);
  EXPECT_NE(b4.find("nested deeper"), std::string::npos) << b4;
  // json_object: parses as an object (bounded by max_tokens; a random model may not end
  // its strings, so only finished ones are checked).
  const json r = chat(
      {{"max_tokens", 200}, {"seed", 5}, {"n", 2}, {"response_format", {{"type", "json_object"}}}});
  for (const json& c : r["choices"]) {
    if (c["finish_reason"] != "stop") continue;
    EXPECT_TRUE(json::parse(c["message"]["content"].get<std::string>()).is_object());
  }
}

}  // namespace
}  // namespace strata::testing
