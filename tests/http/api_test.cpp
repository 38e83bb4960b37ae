// The OpenAI-compatible endpoints against `strata serve` with the real tiny model:
// response shapes, greedy equivalence with `strata run`, streaming, n, stop, logprobs,
// echo, usage and prefix caching, tokenize, auth and routing errors, keep-alive.
#include <gtest/gtest.h>

#include "http/http_test_util.h"

namespace strata::testing {
namespace {

using nlohmann::json;

class Api : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(aidreams_gguf(), serve_args());
  }
  uint16_t port() const { return server_->port(); }
  json completion(const json& body) {
    const auto r = http_post(port(), "/v1/completions", body);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json();
  }
  std::unique_ptr<ServerProcess> server_;
};

TEST_F(Api, HealthModelsAndMetrics) {
  const auto h = http_get(port(), "/health");
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(h.json()["status"], "ok");
  const auto m = http_get(port(), "/v1/models").json();
  EXPECT_EQ(m["object"], "list");
  EXPECT_EQ(m["data"][0]["id"], "aidreams260K");
  EXPECT_EQ(m["data"][0]["max_model_len"], 128);
  completion({{"prompt", "Hello"}, {"max_tokens", 4}, {"ignore_eos", true}});
  // The engine's counters are a snapshot taken after each step: poll until it has the request.
  wait_metrics(port(), [](const std::string& t) {
    return metric_value(t, "strata:generation_tokens_total") == 4;
  });
  const auto metrics = http_get(port(), "/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.headers.at("content-type").find("text/plain"), std::string::npos);
  for (const char* family :
       {"time_to_first_token_seconds histogram", "inter_token_latency_seconds histogram",
        "e2e_request_latency_seconds histogram", "request_queue_time_seconds histogram",
        "num_requests_running gauge", "num_requests_waiting gauge", "kv_cache_usage_ratio gauge",
        "prompt_tokens_total counter", "generation_tokens_total counter",
        "prefix_cache_queries_total counter", "prefix_cache_hits_total counter",
        "num_preemptions_total counter", "request_success_total counter",
        "request_errors_total counter"}) {
    EXPECT_NE(metrics.body.find(std::string("# TYPE strata:") + family), std::string::npos)
        << family;
  }
  EXPECT_EQ(metric_value(metrics.body, "strata:time_to_first_token_seconds_count"), 1);
  EXPECT_EQ(metric_value(metrics.body, "strata:generation_tokens_total"), 4);
  EXPECT_EQ(metric_value(metrics.body, "strata:request_success_total{finish_reason=\"length\"}"),
            1);
  EXPECT_EQ(metric_value(metrics.body, "strata:time_to_first_token_seconds_bucket{le=\"+Inf\"}"),
            1);
}

TEST_F(Api, GreedyCompletionEqualsStrataRun) {
  for (const std::string prompt : {"Once upon a time", "The dream"}) {
    const std::string expected = strata_run_greedy(aidreams_gguf(), prompt, 40);
    const json r = completion({{"prompt", prompt}, {"max_tokens", 40}, {"temperature", 0}});
    EXPECT_EQ(r["choices"][0]["text"], expected) << prompt;
    EXPECT_EQ(r["object"], "text_completion");
    EXPECT_TRUE(r["id"].get<std::string>().starts_with("cmpl-"));
    EXPECT_EQ(r["model"], "aidreams260K");
    EXPECT_GT(r["created"].get<int64_t>(), 1600000000);
    const auto s =
        http_stream(port(), "/v1/completions",
                    {{"prompt", prompt}, {"max_tokens", 40}, {"temperature", 0}, {"stream", true}});
    ASSERT_EQ(s.status, 200);
    EXPECT_TRUE(s.done);
    EXPECT_EQ(stream_text(s), expected);
    EXPECT_EQ(s.events.back()["choices"][0]["finish_reason"], r["choices"][0]["finish_reason"]);
  }
}

TEST_F(Api, UsageCountsTokensAndCachedPrefix) {
  const std::string prompt =
      "Once upon a time there was a dream of colours, and the dream was long and bright";
  const auto ids = http_post(port(), "/tokenize", {{"prompt", prompt}}).json();
  const json a = completion({{"prompt", prompt}, {"max_tokens", 5}, {"ignore_eos", true}});
  EXPECT_EQ(a["usage"]["prompt_tokens"], ids["count"]);
  EXPECT_EQ(a["usage"]["completion_tokens"], 5);
  EXPECT_EQ(a["usage"]["total_tokens"], ids["count"].get<int>() + 5);
  EXPECT_EQ(a["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  const json b = completion({{"prompt", prompt}, {"max_tokens", 5}, {"ignore_eos", true}});
  EXPECT_EQ(b["usage"]["prompt_tokens_details"]["cached_tokens"],
            (ids["count"].get<int>() - 1) / 16 * 16);
  // Another cache salt shares nothing.
  const json c = completion({{"prompt", prompt}, {"max_tokens", 5}, {"cache_salt", "other"}});
  EXPECT_EQ(c["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
}

TEST_F(Api, ChatStreamingAndNot) {
  const json messages = {
      {{"role", "system"}, {"content", "You dream."}},
      {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "Tell me"}}}}}};
  const auto r =
      http_post(port(), "/v1/chat/completions",
                {{"messages", messages}, {"max_completion_tokens", 24}, {"temperature", 0}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = r.json();
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  const std::string text = j["choices"][0]["message"]["content"];
  EXPECT_FALSE(text.empty());
  const auto tok = http_post(port(), "/tokenize", {{"messages", messages}}).json();
  EXPECT_EQ(j["usage"]["prompt_tokens"], tok["count"]);

  const auto s = http_stream(port(), "/v1/chat/completions",
                             {{"messages", messages},
                              {"max_tokens", 24},
                              {"temperature", 0},
                              {"stream", true},
                              {"stream_options", {{"include_usage", true}}}});
  ASSERT_EQ(s.status, 200);
  EXPECT_TRUE(s.done);
  EXPECT_EQ(s.events.front()["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(stream_text(s, 0, true), text);
  EXPECT_EQ(s.events.back()["choices"].size(), 0u);  // the usage chunk
  // The same usage, except that the second request found the prompt in the prefix cache.
  json usage = s.events.back()["usage"];
  EXPECT_GT(usage["prompt_tokens_details"]["cached_tokens"], 0);
  usage["prompt_tokens_details"]["cached_tokens"] = 0;
  EXPECT_EQ(usage, j["usage"]);
  EXPECT_EQ(s.events[s.events.size() - 2]["choices"][0]["finish_reason"],
            j["choices"][0]["finish_reason"]);
}

TEST_F(Api, SeedsReproduceAndNChoicesDiffer) {
  const json body = {
      {"prompt", "The sky"}, {"max_tokens", 24}, {"n", 2}, {"seed", 1234}, {"ignore_eos", true}};
  const json a = completion(body);
  const json b = completion(body);
  ASSERT_EQ(a["choices"].size(), 2u);
  EXPECT_EQ(a["choices"][0]["index"], 0);
  EXPECT_EQ(a["choices"][1]["index"], 1);
  EXPECT_EQ(a["choices"][0]["text"], b["choices"][0]["text"]);
  EXPECT_EQ(a["choices"][1]["text"], b["choices"][1]["text"]);
  EXPECT_NE(a["choices"][0]["text"], a["choices"][1]["text"]);
  EXPECT_EQ(a["usage"]["completion_tokens"], 48);
  // The streamed form gives the same choices.
  json sb = body;
  sb["stream"] = true;
  const auto s = http_stream(port(), "/v1/completions", sb);
  EXPECT_EQ(stream_text(s, 0), a["choices"][0]["text"]);
  EXPECT_EQ(stream_text(s, 1), a["choices"][1]["text"]);
  // A list of prompts: prompts x n choices, indexed prompt-major.
  const json l =
      completion({{"prompt", {"The sky", "A cat"}}, {"max_tokens", 3}, {"n", 2}, {"seed", 1234}});
  ASSERT_EQ(l["choices"].size(), 4u);
  EXPECT_EQ(l["choices"][3]["index"], 3);
}

TEST_F(Api, StopStringsEndTheOutput) {
  const std::string full = completion({{"prompt", "Once upon a time"},
                                       {"max_tokens", 40},
                                       {"temperature", 0}})["choices"][0]["text"];
  ASSERT_GT(full.size(), 20u);
  const std::string stop = full.substr(10, 4);
  const std::string expected = full.substr(0, full.find(stop));
  const json r = completion({{"prompt", "Once upon a time"},
                             {"max_tokens", 40},
                             {"temperature", 0},
                             {"stop", {"zzzz", stop}}});
  EXPECT_EQ(r["choices"][0]["text"], expected);
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
  const auto s = http_stream(port(), "/v1/completions",
                             {{"prompt", "Once upon a time"},
                              {"max_tokens", 40},
                              {"temperature", 0},
                              {"stop", stop},
                              {"stream", true}});
  EXPECT_EQ(stream_text(s), expected);
  EXPECT_EQ(s.events.back()["choices"][0]["finish_reason"], "stop");
  // The stopped sequence left the engine.
  EXPECT_TRUE(engine_idle(wait_metrics(port(), engine_idle)));
}

TEST_F(Api, LogprobsInBothShapes) {
  const json r = completion({{"prompt", "Once upon a time"},
                             {"max_tokens", 6},
                             {"temperature", 0},
                             {"logprobs", 3},
                             {"ignore_eos", true}});
  const json& lp = r["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), 6u);
  ASSERT_EQ(lp["token_logprobs"].size(), 6u);
  ASSERT_EQ(lp["top_logprobs"].size(), 6u);
  ASSERT_EQ(lp["text_offset"].size(), 6u);
  std::string joined;
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_LE(lp["token_logprobs"][i].get<double>(), 0.0);
    EXPECT_GE(lp["top_logprobs"][i].size(), 1u);
    EXPECT_LE(lp["top_logprobs"][i].size(), 3u);
    // Greedy: the chosen token is the most likely one.
    double best = -1e30;
    for (const auto& [tok, v] : lp["top_logprobs"][i].items())
      best = std::max(best, v.get<double>());
    EXPECT_NEAR(lp["token_logprobs"][i].get<double>(), best, 1e-5);
    joined += lp["tokens"][i].get<std::string>();
  }
  EXPECT_EQ(joined, r["choices"][0]["text"]);

  const auto c = http_post(port(), "/v1/chat/completions",
                           {{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
                            {"max_tokens", 4},
                            {"logprobs", true},
                            {"top_logprobs", 2},
                            {"ignore_eos", true}});
  ASSERT_EQ(c.status, 200) << c.body;
  const json cj = c.json();
  const json& content = cj["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 4u);
  EXPECT_EQ(content[0]["top_logprobs"].size(), 2u);
  EXPECT_TRUE(content[0]["bytes"].is_array());
  EXPECT_TRUE(content[0]["token"].is_string());
}

TEST_F(Api, EchoMaxTokensZeroAndTokenPrompts) {
  const json e =
      completion({{"prompt", "Once upon"}, {"max_tokens", 3}, {"echo", true}, {"temperature", 0}});
  EXPECT_TRUE(e["choices"][0]["text"].get<std::string>().starts_with("Once upon"));
  const json z = completion({{"prompt", "Once upon"}, {"max_tokens", 0}, {"echo", true}});
  EXPECT_EQ(z["choices"][0]["text"], "Once upon");
  EXPECT_EQ(z["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(z["usage"]["completion_tokens"], 0);
  // Token-id prompts give what their text gives.
  const auto ids =
      http_post(port(), "/tokenize", {{"prompt", "Once upon a time"}}).json()["tokens"];
  const json a = completion({{"prompt", ids}, {"max_tokens", 10}, {"temperature", 0}});
  const json b =
      completion({{"prompt", "Once upon a time"}, {"max_tokens", 10}, {"temperature", 0}});
  EXPECT_EQ(a["choices"][0]["text"], b["choices"][0]["text"]);
  const auto d = http_post(port(), "/detokenize", {{"tokens", ids}});
  EXPECT_EQ(d.json()["prompt"], "Once upon a time");
}

TEST_F(Api, RoutingErrors) {
  const auto nf = http_get(port(), "/v1/nothing");
  EXPECT_EQ(nf.status, 404);
  EXPECT_TRUE(nf.json()["error"].contains("message"));
  const auto wm = http_get(port(), "/v1/completions");
  EXPECT_EQ(wm.status, 405);
  EXPECT_EQ(wm.headers.at("allow"), "POST");
  EXPECT_EQ(http_request(port(), "POST", "/health").status, 405);
  const auto bad_model =
      http_post(port(), "/v1/completions", {{"model", "gpt-4"}, {"prompt", "x"}});
  EXPECT_EQ(bad_model.status, 404);
  EXPECT_EQ(bad_model.json()["error"]["code"], "model_not_found");
  const auto bad = http_post(port(), "/v1/completions", {{"prompt", "x"}, {"temperature", -1}});
  EXPECT_EQ(bad.status, 400);
  const json err = bad.json()["error"];
  EXPECT_EQ(err["type"], "invalid_request_error");
  EXPECT_EQ(err["param"], "temperature");
  EXPECT_TRUE(err["code"].is_string());
  EXPECT_TRUE(err["message"].is_string());
  const auto m = metrics_text(port());
  EXPECT_EQ(metric_value(m, "strata:request_errors_total{code=\"404\"}"), 2);
  EXPECT_EQ(metric_value(m, "strata:request_errors_total{code=\"405\"}"), 2);
  EXPECT_EQ(metric_value(m, "strata:request_errors_total{code=\"400\"}"), 1);
}

TEST_F(Api, KeepAliveServesManyRequestsOnOneConnection) {
  HttpConnection c(port());
  for (int i = 0; i < 3; ++i) {
    c.send_request("POST", "/v1/completions",
                   json{{"prompt", "Hi"}, {"max_tokens", 3}, {"stream", true}}.dump());
    const auto head = c.read_head();
    EXPECT_EQ(head.status, 200);
    EXPECT_EQ(head.headers.at("content-type"), "text/event-stream");
    int done = 0;
    while (auto ev = c.read_event()) done += *ev == "[DONE]";
    EXPECT_EQ(done, 1);
    c.send_request("GET", "/v1/models");
    EXPECT_EQ(c.read_response().status, 200);
    c.send_request("POST", "/v1/completions", "{bad json");
    EXPECT_EQ(c.read_response().status, 400);
  }
  // Two pipelined requests are answered in order.
  c.send_raw("GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(c.read_response().json()["status"], "ok");
  EXPECT_EQ(c.read_response().json()["object"], "list");
}

TEST(ApiAuth, BearerKeyGuardsEverythingButHealth) {
  ServerProcess server(aidreams_gguf(), serve_args({"--api-key", "sekret"}));
  const uint16_t port = server.port();
  EXPECT_EQ(http_get(port, "/health").status, 200);
  const auto missing = http_post(port, "/v1/completions", {{"prompt", "x"}});
  EXPECT_EQ(missing.status, 401);
  EXPECT_EQ(missing.json()["error"]["type"], "authentication_error");
  EXPECT_EQ(
      http_post(port, "/v1/completions", {{"prompt", "x"}}, {"Authorization: Bearer wrong"}).status,
      401);
  EXPECT_EQ(http_post(port, "/v1/completions", {{"prompt", "x"}}, {"Authorization: sekret"}).status,
            401);
  EXPECT_EQ(http_get(port, "/metrics").status, 401);
  EXPECT_EQ(http_get(port, "/v1/models").status, 401);
  EXPECT_EQ(http_get(port, "/v1/models", {"Authorization: Bearer sekret"}).status, 200);
  EXPECT_EQ(http_post(port, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 2}},
                      {"Authorization: Bearer sekret"})
                .status,
            200);
}

TEST(ApiServedName, ServedModelNameIsTheOnlyModel) {
  ServerProcess server(aidreams_gguf(), serve_args({"--served-model-name", "dreamer"}));
  EXPECT_EQ(http_get(server.port(), "/v1/models").json()["data"][0]["id"], "dreamer");
  const auto r = http_post(server.port(), "/v1/completions",
                           {{"model", "dreamer"}, {"prompt", "x"}, {"max_tokens", 2}});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.json()["model"], "dreamer");
  EXPECT_EQ(
      http_post(server.port(), "/v1/completions", {{"model", "aidreams260K"}, {"prompt", "x"}})
          .status,
      404);
}

}  // namespace
}  // namespace strata::testing

namespace strata::testing {
namespace {

// `serve -c N` caps each request's context below the model's (128 here).
TEST(ApiContext, ServeCapsTheContextAndSaysSo) {
  ServerProcess server(aidreams_gguf(), serve_args({"-c", "64"}));
  const auto m = http_get(server.port(), "/v1/models").json();
  EXPECT_EQ(m["data"][0]["max_model_len"], 64);
  std::vector<int32_t> long_prompt(65, 300);
  long_prompt[0] = 1;
  const auto r =
      http_post(server.port(), "/v1/completions", {{"prompt", long_prompt}, {"max_tokens", 1}});
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("64"), std::string::npos) << r.body;
  // A prompt that fits generates up to the limit and ends with "length".
  const std::vector<int32_t> prompt(long_prompt.begin(), long_prompt.begin() + 60);
  const auto ok = http_post(server.port(), "/v1/completions",
                            {{"prompt", prompt}, {"max_tokens", 30}, {"ignore_eos", true}});
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(ok.json()["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(ok.json()["usage"]["completion_tokens"], 5);  // 60 + 5 tokens: the 65th is never fed
  // -c beyond the model's trained context (128) is kept, as llama.cpp's -c (with a warning
  // at load): users serve files whose metadata understates what they run at.
  ServerProcess wide(aidreams_gguf(), serve_args({"-c", "1000"}));
  EXPECT_EQ(http_get(wide.port(), "/v1/models").json()["data"][0]["max_model_len"], 1000);
}

}  // namespace
}  // namespace strata::testing
