// SSE parsing that does not depend on where the network split the bytes, and the
// client-side record of a streamed OpenAI response (StreamRecorder).
#include "loadgen/sse.h"

#include <gtest/gtest.h>

#include <random>

#include "loadgen/openai_protocol.h"

namespace strata::loadgen {
namespace {

const std::string kStream =
    ": a comment\r\n"
    "data: {\"a\": 1}\r\n\r\n"
    "event: message\n"
    "data:{\"b\": 2}\n\n"
    "data: line one\n"
    "data: line two\n\n"
    "id: 7\n\n"  // no data: no event
    "data: [DONE]\r\n\r\n";

const std::vector<std::string> kEvents = {"{\"a\": 1}", "{\"b\": 2}", "line one\nline two",
                                          "[DONE]"};

std::vector<std::string> feed_split(const std::string& s, const std::vector<size_t>& cuts) {
  SseParser p;
  std::vector<std::string> out;
  size_t at = 0;
  for (size_t cut : cuts) {
    for (auto& e : p.feed(std::string_view(s).substr(at, cut - at))) out.push_back(e);
    at = cut;
  }
  for (auto& e : p.feed(std::string_view(s).substr(at))) out.push_back(e);
  EXPECT_FALSE(p.pending());
  return out;
}

TEST(Sse, WholeStream) {
  EXPECT_EQ(feed_split(kStream, {}), kEvents);
}

TEST(Sse, EverySingleSplitPoint) {
  for (size_t cut = 0; cut <= kStream.size(); ++cut) {
    EXPECT_EQ(feed_split(kStream, {cut}), kEvents) << "cut at " << cut;
  }
}

TEST(Sse, ByteByByteAndRandomSplits) {
  std::vector<size_t> every;
  for (size_t i = 1; i < kStream.size(); ++i) every.push_back(i);
  EXPECT_EQ(feed_split(kStream, every), kEvents);
  std::mt19937 rng(5);
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<size_t> cuts;
    for (size_t i = 1; i < kStream.size(); ++i) {
      if (rng() % 4 == 0) cuts.push_back(i);
    }
    EXPECT_EQ(feed_split(kStream, cuts), kEvents);
  }
}

TEST(Sse, PendingWhileAnEventIsUnfinished) {
  SseParser p;
  EXPECT_TRUE(p.feed("data: {\"x\"").empty());
  EXPECT_TRUE(p.pending());
  EXPECT_TRUE(p.feed(": 1}\n").empty());
  EXPECT_TRUE(p.pending());
  EXPECT_EQ(p.feed("\n"), std::vector<std::string>{"{\"x\": 1}"});
  EXPECT_FALSE(p.pending());
}

std::string chunk(const std::string& text, bool chat = false) {
  nlohmann::json c = chat ? nlohmann::json{{"index", 0}, {"delta", {{"content", text}}}}
                          : nlohmann::json{{"index", 0}, {"text", text}};
  return "data: " + nlohmann::json{{"choices", {c}}, {"usage", nullptr}}.dump() + "\n\n";
}

const std::string kUsage =
    "data: {\"choices\": [], \"usage\": {\"prompt_tokens\": 9, \"completion_tokens\": 4}}\n\n";

TEST(StreamRecorder, TimesTextChunksAndTakesUsage) {
  StreamRecorder r(false, 10.0, 8);
  r.on_head(200);
  r.on_data(chunk("Hel"), 10.25);
  r.on_data(chunk(""), 10.30);  // no text: not a token chunk
  r.on_data(chunk("lo") + chunk(" wor"), 10.50);
  r.on_data(chunk("ld"), 10.75);
  r.on_data(kUsage, 10.80);
  r.on_data("data: [DONE]\n\n", 10.81);
  const RequestRecord rec = r.finish("");
  ASSERT_TRUE(rec.ok()) << rec.error;
  EXPECT_DOUBLE_EQ(rec.ttft_s, 0.25);
  EXPECT_DOUBLE_EQ(rec.e2el_s, 0.75);  // the last text chunk
  ASSERT_EQ(rec.itl_s.size(), 3u);
  EXPECT_DOUBLE_EQ(rec.itl_s[0], 0.25);
  EXPECT_DOUBLE_EQ(rec.itl_s[1], 0.0);
  EXPECT_DOUBLE_EQ(rec.itl_s[2], 0.25);
  EXPECT_EQ(rec.output_tokens, 4);  // usage
  EXPECT_EQ(rec.prompt_tokens, 9);
}

TEST(StreamRecorder, ChatRoleChunkIsNotTheFirstToken) {
  StreamRecorder r(true, 0.0, 8);
  r.on_head(200);
  r.on_data(
      "data: {\"choices\": [{\"index\": 0, \"delta\": {\"role\": \"assistant\", \"content\": "
      "\"\"}}]}\n\n",
      0.01);
  r.on_data(chunk("A", true), 0.2);
  r.on_data(chunk("B", true), 0.3);
  r.on_data(
      "data: {\"choices\": [{\"index\": 0, \"delta\": {}, \"finish_reason\": \"length\"}]}\n\n",
      0.31);
  r.on_data("data: [DONE]\n\n", 0.32);
  const RequestRecord rec = r.finish("");
  ASSERT_TRUE(rec.ok()) << rec.error;
  EXPECT_DOUBLE_EQ(rec.ttft_s, 0.2);
  EXPECT_DOUBLE_EQ(rec.e2el_s, 0.3);
  EXPECT_EQ(rec.output_tokens, 2);  // no usage: counted chunks
  EXPECT_EQ(rec.prompt_tokens, 8);  // no usage: the dataset's count
}

TEST(StreamRecorder, FailuresCarryTheirReason) {
  {
    StreamRecorder r(false, 0, 1);
    r.on_head(429);
    r.on_data("{\"error\": {\"message\": \"queue full\", \"code\": \"queue_full\"}}", 0.1);
    const auto rec = r.finish("");
    EXPECT_EQ(rec.error, "HTTP 429: queue full");
  }
  {
    StreamRecorder r(false, 0, 1);
    r.on_head(200);
    r.on_data(chunk("a"), 0.1);
    const auto rec = r.finish("end of stream");
    EXPECT_EQ(rec.error, "the stream broke: end of stream");
    EXPECT_DOUBLE_EQ(rec.ttft_s, 0.1);  // what was measured is kept
  }
  {
    StreamRecorder r(false, 0, 1);
    r.on_head(200);
    r.on_data(chunk("a"), 0.1);
    EXPECT_EQ(r.finish("").error, "the stream ended without data: [DONE]");
  }
  {
    StreamRecorder r(false, 0, 1);
    r.on_head(200);
    r.on_data(chunk("a") + "data: {\"error\": {\"message\": \"shutting down\"}}\n\n", 0.1);
    r.on_data("data: [DONE]\n\n", 0.2);
    EXPECT_EQ(r.finish("").error, "error event in the stream: shutting down");
  }
  {
    StreamRecorder r(false, 0, 1);
    r.on_head(200);
    r.on_data("data: [DONE]\n\n", 0.2);
    EXPECT_EQ(r.finish("").error, "the stream carried no generated text");
  }
  {
    StreamRecorder r(false, 0, 1);
    r.on_head(200);
    r.on_data("data: not json\n\n", 0.2);
    EXPECT_NE(r.finish("").error.find("not JSON"), std::string::npos);
  }
  {
    StreamRecorder r(false, 0, 1);
    EXPECT_EQ(r.finish("Connection refused").error, "no response: Connection refused");
  }
}

TEST(RequestBody, CompletionAndChatShapes) {
  Prompt p;
  p.ids = {5, 6, 7};
  p.text = "a b c";
  p.output_len = 16;
  RequestOptions o;
  o.model = "m";
  o.ignore_eos = true;
  auto b = request_body(p, o);
  EXPECT_EQ(b["prompt"], "a b c");
  EXPECT_EQ(b["max_tokens"], 16);
  EXPECT_EQ(b["min_tokens"], 16);
  EXPECT_EQ(b["ignore_eos"], true);
  EXPECT_EQ(b["stream"], true);
  EXPECT_EQ(b["stream_options"]["include_usage"], true);
  EXPECT_EQ(b["model"], "m");
  o.token_ids = true;
  o.extra = {{"top_k", 1}, {"temperature", 0.5}};
  b = request_body(p, o);
  EXPECT_EQ(b["prompt"], nlohmann::json::array({5, 6, 7}));
  EXPECT_EQ(b["top_k"], 1);
  EXPECT_EQ(b["temperature"], 0.5);
  o = RequestOptions{};
  o.chat = true;
  b = request_body(p, o);
  EXPECT_EQ(b["messages"][0]["content"], "a b c");
  EXPECT_EQ(b["max_completion_tokens"], 16);
  EXPECT_FALSE(b.contains("model"));
  EXPECT_FALSE(b.contains("ignore_eos"));
}

}  // namespace
}  // namespace strata::loadgen
