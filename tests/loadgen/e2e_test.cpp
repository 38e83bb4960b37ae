// `strata bench serve` end to end against a real `strata serve` child process on the
// tiny model: complete result JSON, zero failures, the asked output lengths; the
// server's tokenizer and the chat endpoint; failures (a wrong API key) reported.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "http/http_test_util.h"

namespace strata::testing {
namespace {

using nlohmann::json;

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

std::string bench_cmd(uint16_t port, const std::string& args) {
  return shell_quote(strata_bin()) +
         " bench serve --base-url http://127.0.0.1:" + std::to_string(port) + " " + args + " 2>&1";
}

class BenchServe : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(aidreams_gguf(), serve_args({"--api-key", "sk-t"}));
  }
  std::unique_ptr<ServerProcess> server_;
};

TEST_F(BenchServe, RandomDatasetCompletions) {
  const std::string dir = scratch_dir();
  const auto r = run_command(bench_cmd(
      server_->port(), "--api-key sk-t --model-path " + shell_quote(aidreams_gguf()) +
                           " --dataset random --num-prompts 16 --input-len 32 --output-len 16"
                           " --request-rate inf --max-concurrency 4 --ignore-eos --seed 3"
                           " --goodput ttft:60000 --result-json " +
                           dir + "/random.json --plot " + dir + "/random.svg"));
  ASSERT_EQ(r.exit_code, 0) << r.out << server_->log();
  EXPECT_NE(r.out.find("Serving Benchmark Result"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Mean TTFT (ms):"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("P99 E2EL (ms):"), std::string::npos) << r.out;

  const json j = read_json(dir + "/random.json");
  const json& s = j["summary"];
  EXPECT_EQ(s["completed"], 16);
  EXPECT_EQ(s["failed"], 0);
  EXPECT_GT(s["duration_s"].get<double>(), 0);
  EXPECT_GT(s["request_throughput"].get<double>(), 0);
  EXPECT_NEAR(s["output_throughput"].get<double>(), 16 * 16 / s["duration_s"].get<double>(), 1e-6);
  EXPECT_GT(s["total_token_throughput"].get<double>(), s["output_throughput"].get<double>());
  EXPECT_NEAR(s["goodput"].get<double>(), s["request_throughput"].get<double>(), 1e-9);
  for (const char* m : {"ttft_ms", "tpot_ms", "itl_ms", "e2el_ms"}) {
    for (const char* k : {"mean", "median", "p90", "p99"}) {
      EXPECT_TRUE(s[m][k].is_number()) << m << " " << k;
    }
  }
  EXPECT_EQ(j["config"]["num_prompts"], 16);
  EXPECT_EQ(j["config"]["max_concurrency"], 4);
  EXPECT_EQ(j["config"]["request_rate"], "inf");
  EXPECT_EQ(j["config"]["endpoint"], "/v1/completions");
  ASSERT_EQ(j["requests"].size(), 16u);
  for (const json& q : j["requests"]) {
    EXPECT_TRUE(q["error"].is_null()) << q["error"];
    EXPECT_EQ(q["output_tokens"], 16);
    EXPECT_EQ(q["prompt_tokens"], 33);  // 32 text tokens + the BOS the server adds
    EXPECT_GE(q["itl_ms"].size(), 1u);
    EXPECT_LE(q["ttft_ms"].get<double>(), q["e2el_ms"].get<double>());
  }
  std::ifstream svg(dir + "/random.svg");
  const std::string text(std::istreambuf_iterator<char>(svg), {});
  EXPECT_EQ(text.rfind("<svg", 0), 0u);
  EXPECT_NE(text.find("TTFT CDF"), std::string::npos);
  EXPECT_NE(text.find("</svg>"), std::string::npos);
}

TEST_F(BenchServe, ServerTokenizerTokenIdsAndChat) {
  const std::string dir = scratch_dir();
  auto r = run_command(
      bench_cmd(server_->port(),
                "--api-key sk-t --dataset shared-prefix --num-prompts 6 --num-prefixes 2"
                " --prefix-len 20 --question-len 5 --output-len 8 --ignore-eos --prompt-ids"
                " --request-rate 50 --result-json " +
                    dir + "/ids.json"));
  ASSERT_EQ(r.exit_code, 0) << r.out << server_->log();
  json j = read_json(dir + "/ids.json");
  EXPECT_EQ(j["summary"]["completed"], 6);
  EXPECT_EQ(j["config"]["tokenizer"], "server");
  for (const json& q : j["requests"]) {
    EXPECT_EQ(q["prompt_tokens"], 25);  // token ids: exactly what was sent
    EXPECT_EQ(q["output_tokens"], 8);
  }
  r = run_command(bench_cmd(server_->port(),
                            "--api-key sk-t --endpoint /v1/chat/completions --num-prompts 4"
                            " --input-len 8 --output-len 8 --ignore-eos --max-concurrency 2"
                            " --result-json " +
                                dir + "/chat.json"));
  ASSERT_EQ(r.exit_code, 0) << r.out << server_->log();
  j = read_json(dir + "/chat.json");
  EXPECT_EQ(j["summary"]["completed"], 4);
  for (const json& q : j["requests"]) EXPECT_EQ(q["output_tokens"], 8);
}

TEST_F(BenchServe, FailedRequestsAreReported) {
  const std::string dir = scratch_dir();
  const auto r = run_command(bench_cmd(
      server_->port(),
      "--api-key wrong --model aidreams260K --model-path " + shell_quote(aidreams_gguf()) +
          " --num-prompts 3 --input-len 4 --output-len 4 --result-json " + dir + "/fail.json"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("Failed requests:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("all 3 requests failed"), std::string::npos) << r.out;
  const json j = read_json(dir + "/fail.json");
  EXPECT_EQ(j["summary"]["completed"], 0);
  EXPECT_EQ(j["summary"]["failed"], 3);
  EXPECT_TRUE(j["summary"]["ttft_ms"]["mean"].is_null());
  for (const json& q : j["requests"]) {
    EXPECT_EQ(q["error"].get<std::string>().rfind("HTTP 401", 0), 0u) << q["error"];
  }
}

TEST(BenchServeCli, HelpListsEveryFlag) {
  const auto r = run_command(shell_quote(strata_bin()) + " bench serve --help");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  for (const char* flag : {"--base-url",
                           "--endpoint",
                           "--api-key",
                           "--model-path",
                           "--dataset",
                           "--num-prompts",
                           "--input-len",
                           "--output-len",
                           "--range-ratio",
                           "--prefix-len",
                           "--num-prefixes",
                           "--doc-len-min",
                           "--doc-len-max",
                           "--doc-repeat-rate",
                           "--request-rate",
                           "--burstiness",
                           "--max-concurrency",
                           "--seed",
                           "--ignore-eos",
                           "--percentiles",
                           "--goodput",
                           "--result-json",
                           "--plot",
                           "--progress"}) {
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
  }
  const auto bad =
      run_command(shell_quote(strata_bin()) +
                  " bench serve --endpoint /v1/embeddings --base-url http://127.0.0.1:1 2>&1");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.out.find("--endpoint"), std::string::npos) << bad.out;
}

}  // namespace
}  // namespace strata::testing
