// Malformed and extreme requests, table-driven: each gets the expected status with an
// OpenAI-shaped JSON error (or a normal answer where the input is merely unusual), and
// after each one the server is still up and serves a normal request.
#include <gtest/gtest.h>

#include "http/http_test_util.h"

namespace strata::testing {
namespace {

using nlohmann::json;

struct Case {
  std::string name;
  std::string path;  // POST target; empty: `raw` is sent as is
  std::string body;
  int status;
  std::string raw = {};
};

std::string completion_body(const std::string& field, const std::string& value) {
  return R"({"prompt": "Hi", "max_tokens": 2, ")" + field + "\": " + value + "}";
}

std::vector<Case> cases() {
  std::vector<Case> c;
  const std::string comp = "/v1/completions", chat = "/v1/chat/completions";
  // Not JSON, or not an object.
  for (const auto& [name, body] : std::vector<std::pair<std::string, std::string>>{
           {"empty body", ""},
           {"truncated", "{\"prompt\": \"x\""},
           {"not json", "hello"},
           {"array", "[1, 2]"},
           {"null", "null"},
           {"string", "\"prompt\""},
           {"trailing comma", "{\"prompt\": \"x\",}"},
           {"trailing garbage", "{\"prompt\": \"x\"} x"},
           {"NaN literal", "{\"prompt\": \"x\", \"temperature\": NaN}"},
           {"single quotes", "{'prompt': 'x'}"}}) {
    c.push_back({"bad json: " + name, comp, body, 400});
  }
  // Every numeric field at -1, 0, 2^31, 2^63, a NaN-like string and an overflowing double.
  const std::vector<std::string> values = {"-1",      "0",    "2147483648", "9223372036854775808",
                                           "\"NaN\"", "1e400"};
  const std::vector<std::pair<std::string, std::vector<int>>> fields = {
      {"max_tokens", {400, 200, 400, 400, 400, 400}},
      {"n", {400, 400, 400, 400, 400, 400}},
      {"temperature", {400, 200, 400, 400, 400, 400}},
      {"top_p", {400, 400, 400, 400, 400, 400}},
      {"top_k", {200, 200, 400, 400, 400, 400}},
      {"min_p", {400, 200, 400, 400, 400, 400}},
      {"presence_penalty", {200, 200, 400, 400, 400, 400}},
      {"frequency_penalty", {200, 200, 400, 400, 400, 400}},
      {"repetition_penalty", {400, 400, 400, 400, 400, 400}},
      {"seed", {200, 200, 200, 200, 400, 400}},
      {"logprobs", {400, 200, 400, 400, 400, 400}},
      {"priority", {200, 200, 400, 400, 400, 400}},
      {"min_tokens", {400, 200, 400, 400, 400, 400}},
  };
  for (const auto& [field, expected] : fields) {
    for (size_t i = 0; i < values.size(); ++i) {
      c.push_back({field + "=" + values[i], comp, completion_body(field, values[i]), expected[i]});
    }
  }
  // Wrong types and shapes.
  const std::vector<std::pair<std::string, std::string>> wrong = {
      {"prompt", "5"},
      {"prompt", "{}"},
      {"prompt", "[1, \"a\"]"},
      {"prompt", "[[]]"},
      {"prompt", "[]"},
      {"prompt", "[-5]"},
      {"prompt", "[99999]"},
      {"prompt", "[1.5]"},
      {"prompt", "[true]"},
      {"stream", "\"yes\""},
      {"echo", "1"},
      {"stop", "5"},
      {"stop", "[1]"},
      {"stop", "[\"a\", \"b\", \"c\", \"d\", \"e\"]"},
      {"stream_options", "{\"include_usage\": true}"},
      {"logprobs", "true"},
      {"user", "5"},
      {"cache_salt", "[]"},
      {"ignore_eos", "\"no\""},
      {"max_tokens", "10.5"},
      {"max_tokens", "1000000000"},
      {"model", "7"}};
  for (const auto& [field, value] : wrong) {
    std::string body = R"({"max_tokens": 2, "prompt": "Hi", ")" + field + "\": " + value + "}";
    if (field == "prompt" || field == "max_tokens") body = R"({")" + field + "\": " + value + "}";
    c.push_back({"wrong: " + field + "=" + value, comp, body, 400});
  }
  c.push_back({"no prompt", comp, R"({"max_tokens": 2})", 400});
  c.push_back({"left-recursive grammar", comp,
               R"({"prompt": "Hi", "grammar": "root ::= root \"a\" | \"a\""})", 400});
  c.push_back({"unsupported schema keyword", comp,
               R"({"prompt": "Hi", "response_format": {"type": "json_schema", "json_schema":
                   {"name": "x", "schema": {"type": "integer", "minimum": 1}}}})",
               400});
  c.push_back({"grammar and response_format", comp,
               R"({"prompt": "Hi", "grammar": "root ::= \"a\"",
                   "response_format": {"type": "json_object"}})",
               400});
  c.push_back({"too many sequences", comp,
               R"({"prompt": ["a","b","c","d","e","f","g","h","i"], "n": 16})", 400});
  c.push_back({"prompt longer than the context", comp,
               json{{"prompt", std::vector<int>(200, 5)}, {"max_tokens", 1}}.dump(), 400});
  std::string long_text;
  for (int i = 0; i < 2000; ++i) long_text += "dream ";
  c.push_back({"long text prompt", comp, json{{"prompt", long_text}}.dump(), 400});
  c.push_back({"invalid UTF-8", comp, "{\"prompt\": \"\xff\xfe\xc3\"}", 400});
  c.push_back({"deep nesting", comp,
               "{\"prompt\": " + std::string(100000, '[') + std::string(100000, ']') + "}", 400});
  c.push_back(
      {"unknown fields are ignored", comp,
       R"({"prompt": "Hi", "max_tokens": 2, "frobnicate": {"a": [1, 2]}, "best_of": 1, "suffix": null})",
       200});
  c.push_back({"empty prompt string", comp, R"({"prompt": "", "max_tokens": 2})", 200});
  c.push_back({"null fields mean unset", comp,
               R"({"prompt": "Hi", "max_tokens": null, "temperature": null})", 200});
  // Chat shapes.
  for (const auto& [name, messages] : std::vector<std::pair<std::string, std::string>>{
           {"string", "\"hi\""},
           {"empty", "[]"},
           {"not objects", "[1]"},
           {"no role", "[{\"content\": \"x\"}]"},
           {"bad role", "[{\"role\": \"wizard\", \"content\": \"x\"}]"},
           {"no content", "[{\"role\": \"user\"}]"},
           {"number content", "[{\"role\": \"user\", \"content\": 5}]"},
           {"image part",
            "[{\"role\": \"user\", \"content\": [{\"type\": \"image_url\", \"image_url\": {}}]}]"},
           {"part without text", "[{\"role\": \"user\", \"content\": [{\"type\": \"text\"}]}]"}}) {
    c.push_back({"chat messages " + name, chat, "{\"messages\": " + messages + "}", 400});
  }
  c.push_back({"chat top_logprobs without logprobs", chat,
               R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})", 400});
  c.push_back(
      {"chat top_logprobs above 20", chat,
       R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true, "top_logprobs": 21})",
       400});
  c.push_back({"chat max_completion_tokens -1", chat,
               R"({"messages": [{"role": "user", "content": "x"}], "max_completion_tokens": -1})",
               400});
  c.push_back(
      {"chat empty assistant content", chat,
       R"({"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": null}], "max_tokens": 2})",
       200});
  // Other routes.
  c.push_back({"detokenize bad id", "/detokenize", R"({"tokens": [1, 100000]})", 400});
  c.push_back({"detokenize not a list", "/detokenize", R"({"tokens": "1 2"})", 400});
  c.push_back({"tokenize no prompt", "/tokenize", R"({})", 400});
  // Transport-level abuse.
  std::string big(10'000'000, 'a');
  c.push_back({"10 MB body", "", "", 413,
               "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                   std::to_string(big.size()) + "\r\n\r\n" + big});
  c.push_back({"chunked body over the limit", "", "", 413,
               "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
                   std::string("989680\r\n") + big + "\r\n0\r\n\r\n"});
  auto chunk = [](const std::string& s) {
    char size[16];
    std::snprintf(size, sizeof size, "%zx", s.size());
    return std::string(size) + "\r\n" + s + "\r\n";
  };
  c.push_back({"chunked body", "", "", 200,
               "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
                   chunk("{\"prompt\": \"Hi\",") + chunk(" \"max_tokens\": 2") + chunk("}") +
                   "0\r\n\r\n"});
  c.push_back({"garbage request line", "", "", 400, "GARBAGE\r\n\r\n"});
  c.push_back(
      {"huge header", "", "", 400,
       "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(100000, 'b') + "\r\n\r\n"});
  c.push_back({"bad content length", "", "", 400,
               "POST /v1/completions HTTP/1.1\r\nContent-Length: zz\r\n\r\n"});
  return c;
}

TEST(Hostile, EveryCaseGetsTheRightStatusAndTheServerStaysUp) {
  ServerProcess server(aidreams_gguf(), serve_args({"--max-body-bytes", "1000000"}));
  const uint16_t port = server.port();
  const auto all = cases();
  ASSERT_GE(all.size(), 40u);
  for (const Case& c : all) {
    SCOPED_TRACE(c.name);
    HttpResult r;
    try {
      HttpConnection conn(port);
      if (c.path.empty()) {
        conn.send_raw(c.raw);
      } else {
        conn.send_request("POST", c.path, c.body);
      }
      r = conn.read_response();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "no response: " << e.what();
      continue;
    }
    EXPECT_EQ(r.status, c.status) << r.body;
    if (c.status >= 400) {
      json err;
      ASSERT_NO_THROW(err = r.json()) << r.body;
      ASSERT_TRUE(err.contains("error")) << r.body;
      EXPECT_TRUE(err["error"]["message"].is_string());
      EXPECT_TRUE(err["error"]["type"].is_string());
      EXPECT_TRUE(err["error"].contains("param"));
      EXPECT_TRUE(err["error"]["code"].is_string());
    }
    // Still up, and still serving.
    ASSERT_TRUE(server.running()) << server.log();
    const auto ok = http_post(port, "/v1/completions", {{"prompt", "Hi"}, {"max_tokens", 1}});
    ASSERT_EQ(ok.status, 200) << ok.body;
  }
  EXPECT_TRUE(engine_idle(wait_metrics(port, engine_idle)));
}

}  // namespace
}  // namespace strata::testing
