// Model-free tests of request parsing and validation, response formatting and metrics.
#include "server/request_parse.h"

#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/json_fields.h"
#include "server/metrics.h"

namespace strata::server {
namespace {

using nlohmann::json;

ParseLimits limits() {
  ParseLimits l;
  l.context_length = 128;
  return l;
}

GenerationRequest parse(const json& body, ApiKind kind = ApiKind::kCompletion) {
  return parse_generation_request(body, kind, limits());
}

// The field an invalid body is blamed on ("" if it parses).
std::string blamed(const json& body, ApiKind kind = ApiKind::kCompletion) {
  try {
    parse(body, kind);
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    return e.param();
  }
  return "";
}

TEST(RequestParse, DefaultsFollowOpenAi) {
  const auto r = parse({{"prompt", "hi"}});
  EXPECT_EQ(r.options.stop.max_tokens, 16);
  EXPECT_FLOAT_EQ(r.options.sampling.temperature, 1.0f);
  EXPECT_FLOAT_EQ(r.options.sampling.top_p, 1.0f);
  EXPECT_EQ(r.n, 1);
  EXPECT_FALSE(r.stream);
  EXPECT_EQ(r.options.logprobs, -1);
  EXPECT_FALSE(r.seed.has_value());
  const auto c = parse({{"messages", {{{"role", "user"}, {"content", "x"}}}}}, ApiKind::kChat);
  EXPECT_EQ(c.options.stop.max_tokens, 128);  // chat: up to the context
  EXPECT_FALSE(c.max_tokens_given);
}

TEST(RequestParse, SpeculativeOptOut) {
  EXPECT_TRUE(parse({{"prompt", "hi"}}).options.speculative);
  EXPECT_FALSE(parse({{"prompt", "hi"}, {"speculative", false}}).options.speculative);
  EXPECT_EQ(blamed({{"prompt", "hi"}, {"speculative", "no"}}), "speculative");
}

TEST(RequestParse, PromptForms) {
  EXPECT_EQ(parse({{"prompt", "a"}}).prompts.size(), 1u);
  EXPECT_EQ(std::get<std::vector<int32_t>>(parse({{"prompt", {1, 2, 3}}}).prompts[0]).size(), 3u);
  EXPECT_EQ(parse({{"prompt", {"a", "b"}}}).prompts.size(), 2u);
  EXPECT_EQ(parse({{"prompt", {{1, 2}, {3}}}}).prompts.size(), 2u);
  EXPECT_EQ(blamed({{"prompt", json::array()}}), "prompt");
  EXPECT_EQ(blamed({{"prompt", {json::array()}}}), "prompt");
  EXPECT_EQ(blamed({{"prompt", {1, "a"}}}), "prompt");
  EXPECT_EQ(blamed({{"prompt", {-1}}}), "prompt");
  EXPECT_EQ(blamed(json::object()), "prompt");
}

TEST(RequestParse, RangesNameTheirField) {
  EXPECT_EQ(blamed({{"prompt", "a"}, {"temperature", -0.1}}), "temperature");
  EXPECT_EQ(blamed({{"prompt", "a"}, {"top_p", 0}}), "top_p");
  EXPECT_EQ(blamed({{"prompt", "a"}, {"top_p", 1.01}}), "top_p");
  EXPECT_EQ(blamed({{"prompt", "a"}, {"max_tokens", 129}}), "max_tokens");
  EXPECT_EQ(blamed({{"prompt", "a"}, {"max_tokens", -1}}), "max_tokens");
  EXPECT_EQ(blamed({{"prompt", "a"}, {"n", 17}}), "n");
  EXPECT_EQ(blamed({{"prompt", "a"}, {"n", 0}}), "n");
  EXPECT_EQ(blamed({{"prompt", "a"}, {"stop", {"1", "2", "3", "4", "5"}}}), "stop");
  EXPECT_EQ(blamed({{"prompt", "a"}, {"min_tokens", 5}, {"max_tokens", 4}}), "min_tokens");
  EXPECT_EQ(blamed({{"prompt", "a"}, {"stream_options", {{"include_usage", true}}}}),
            "stream_options");
  EXPECT_EQ(blamed({{"prompt", "a"}, {"priority", 4294967296LL}}), "priority");
  EXPECT_EQ(blamed({{"prompt", "a"}, {"max_tokens", 10.0}}), "");  // integral floats are integers
  EXPECT_EQ(blamed({{"prompt", "a"}, {"max_tokens", 10.5}}), "max_tokens");
  EXPECT_EQ(blamed({{"prompt", "a"}, {"top_k", -1}}), "");  // -1: off
  EXPECT_EQ(
      blamed({{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"max_completion_tokens", 0}},
             ApiKind::kChat),
      "");
}

TEST(RequestParse, SeedsKeepTheirBits) {
  EXPECT_EQ(*parse({{"prompt", "a"}, {"seed", -1}}).seed, ~uint64_t{0});
  EXPECT_EQ(*parse({{"prompt", "a"}, {"seed", 9223372036854775808ULL}}).seed, uint64_t{1} << 63);
  EXPECT_EQ(blamed({{"prompt", "a"}, {"seed", "1"}}), "seed");
}

TEST(RequestParse, ChatMessages) {
  const auto r = parse(
      {{"messages",
        {{{"role", "developer"}, {"content", "be brief"}},
         {{"role", "user"},
          {"content", {{{"type", "text"}, {"text", "a"}}, {{"type", "text"}, {"text", "b"}}}}},
         {{"role", "assistant"}, {"content", nullptr}}}},
       {"logprobs", true},
       {"top_logprobs", 3}},
      ApiKind::kChat);
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[0]["role"], "system");
  EXPECT_EQ(r.messages[1]["content"], "ab");
  EXPECT_EQ(r.messages[2]["content"], "");
  EXPECT_EQ(r.options.logprobs, 3);
  EXPECT_EQ(blamed({{"messages", json::array()}}, ApiKind::kChat), "messages");
  EXPECT_EQ(blamed({{"messages", {{{"role", "function"}, {"content", "x"}}}}}, ApiKind::kChat),
            "messages[0].role");
  // A tool result must say which call it answers.
  EXPECT_EQ(blamed({{"messages", {{{"role", "tool"}, {"content", "x"}}}}}, ApiKind::kChat),
            "messages[0].tool_call_id");
  EXPECT_EQ(blamed({{"messages", {{{"role", "user"}}}}}, ApiKind::kChat), "messages[0].content");
}

TEST(JsonBody, DepthAndShapeAreCheckedBeforeUse) {
  EXPECT_EQ(json_nesting_depth(R"({"a": "[[[[", "b": [[1]]})"), 3);
  EXPECT_THROW(parse_json_object(std::string(1000, '[')), ApiError);
  EXPECT_THROW(parse_json_object("[]"), ApiError);
  EXPECT_THROW(parse_json_object("{\"a\": 1e400}"), ApiError);
  EXPECT_NO_THROW(parse_json_object("{\"a\": [1, {\"b\": 2}]}"));
}

TEST(ErrorBody, HasOpenAiShape) {
  const json j = json::parse(error_body(invalid_field("top_p", "must be in (0, 1]")));
  EXPECT_EQ(j["error"]["message"], "top_p: must be in (0, 1]");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["param"], "top_p");
  EXPECT_EQ(j["error"]["code"], "invalid_request");
  EXPECT_TRUE(json::parse(error_body(ApiError(404, "x")))["error"]["param"].is_null());
}

TEST(Metrics, PrometheusTextFormat) {
  ServerMetrics m;
  m.time_to_first_token.observe(0.003);
  m.time_to_first_token.observe(0.2);
  m.time_to_first_token.observe(1000);
  m.count_finish(FinishReason::kStop);
  m.count_error(429);
  EngineMetrics e;
  e.running = 2;
  e.kv.n_blocks = 4;
  e.kv.used = 1;
  const std::string text = m.render(e);
  EXPECT_NE(text.find("# TYPE strata:time_to_first_token_seconds histogram\n"), std::string::npos);
  EXPECT_NE(text.find("strata:time_to_first_token_seconds_bucket{le=\"0.0025\"} 0\n"),
            std::string::npos);
  EXPECT_NE(text.find("strata:time_to_first_token_seconds_bucket{le=\"0.005\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("strata:time_to_first_token_seconds_bucket{le=\"0.25\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("strata:time_to_first_token_seconds_bucket{le=\"+Inf\"} 3\n"),
            std::string::npos);
  EXPECT_NE(text.find("strata:time_to_first_token_seconds_count 3\n"), std::string::npos);
  EXPECT_NE(text.find("strata:num_requests_running 2\n"), std::string::npos);
  EXPECT_NE(text.find("strata:kv_cache_usage_ratio 0.25\n"), std::string::npos);
  EXPECT_NE(text.find("strata:request_success_total{finish_reason=\"stop\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("strata:request_success_total{finish_reason=\"length\"} 0\n"),
            std::string::npos);
  EXPECT_NE(text.find("strata:request_errors_total{code=\"429\"} 1\n"), std::string::npos);
}

}  // namespace
}  // namespace strata::server
