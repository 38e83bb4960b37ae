// The CLI's exact output forms that scripts rely on, and its behaviour on bad input.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "support/paths.h"
#include "support/process.h"
#include "support/tiny_models.h"

namespace strata {
namespace {

using testing::run_command;
using testing::strata_bin;

std::string write_file(const std::string& name, const std::string& content) {
  const std::string path = testing::scratch_dir() + "/" + name;
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

TEST(Cli, TemplateRendersExpectedCasesByteForByte) {
  std::ifstream in(testing::shared_dir() + "/templates/expected.json");
  const auto spec = nlohmann::ordered_json::parse(in);
  int checked = 0;
  for (const auto& c : spec["cases"]) {
    // Every eighth case keeps the test short; the chat_template tests run all of them.
    if (checked++ % 8 != 0) continue;
    const auto messages = write_file(
        "messages.json", spec["conversations"][c["conversation"].get<std::string>()].dump());
    std::string cmd = strata_bin() + " template --template '" + testing::shared_dir() +
                      "/templates/" + c["template"].get<std::string>() + "' --messages '" +
                      messages + "' --now 2026-01-15T12:00:00Z";
    if (c["add_generation_prompt"] == "True" || c["add_generation_prompt"] == true)
      cmd += " --add-generation-prompt";
    cmd += " --bos-token '" + c["bos_token"].get<std::string>() + "' --eos-token '" +
           c["eos_token"].get<std::string>() + "'";
    const auto r = run_command(cmd + " 2>&1");
    EXPECT_EQ(r.exit_code, 0) << cmd;
    EXPECT_EQ(r.out, c["expected"].get<std::string>()) << cmd;
  }
}

TEST(Cli, TokenizePrintsIdsOnOneLine) {
  const std::string vocab = testing::shared_dir() + "/vocab/ggml-vocab-llama-spm.gguf";
  auto r = run_command(strata_bin() + " tokenize -m " + vocab + " 'Hello world'");
  EXPECT_EQ(r.out, "1 15043 3186\n");
  r = run_command(strata_bin() + " tokenize -m " + vocab + " --no-bos 'Hello world'");
  EXPECT_EQ(r.out, "15043 3186\n");
  r = run_command(strata_bin() + " detokenize -m " + vocab + " 15043 3186");
  EXPECT_EQ(r.out, "Hello world\n");
}

TEST(Cli, MakeModelInfoAndLogits) {
  const std::string path = testing::scratch_dir() + "/tiny-q8.gguf";
  auto r = run_command(strata_bin() + " make-model " + path +
                       " --preset tiny --type q8_0 --seed 3 --vocab-from " + testing::shared_dir() +
                       "/vocab/ggml-vocab-llama-spm.gguf 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  r = run_command(strata_bin() + " info " + path);
  EXPECT_NE(r.out.find("architecture:   llama"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("vocab:          32000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("q8_0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kernels:        "), std::string::npos) << r.out;
  const std::string out = testing::scratch_dir() + "/logits.f32";
  r = run_command(strata_bin() + " logits -m " + path + " --tokens '1 15043 3186' -o " + out +
                  " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::ifstream f(out, std::ios::binary | std::ios::ate);
  EXPECT_EQ(static_cast<size_t>(f.tellg()), 3u * 32000u * 4u);
}

TEST(Cli, BadModelFileIsAnErrorNotACrash) {
  const auto junk =
      write_file("junk.gguf", std::string("GGUF\x03\0\0\0", 8) + std::string(40, '\xff'));
  const auto r = run_command(strata_bin() + " run -m " + junk + " -p hi 2>&1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("strata: error:"), std::string::npos) << r.out;
}

TEST(Cli, BatchRunsJsonlRequests) {
  const auto in = write_file(
      "req.jsonl",
      "{\"id\": \"a\", \"prompt\": \"I dreamed\", \"max_tokens\": 12, \"temperature\": 0}\n"
      "{\"id\": \"b\", \"prompt_tokens\": [1, 303, 281], \"max_tokens\": 5, \"temperature\": 0}\n");
  const std::string out = testing::scratch_dir() + "/res.jsonl";
  const auto r = run_command(strata_bin() + " batch -m " + testing::aidreams_gguf() + " --input " +
                             in + " --output " + out + " --prefill-chunk 4 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::ifstream res(out);
  std::string line;
  std::vector<nlohmann::json> rows;
  while (std::getline(res, line)) rows.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["id"], "a");
  EXPECT_EQ(rows[0]["finish_reason"], "length");
  EXPECT_EQ(rows[0]["text"],
            ", as I sense the nodes, a");  // the golden greedy text's first 12 tokens
  EXPECT_EQ(rows[1]["tokens"].size(), 5u);
  EXPECT_EQ(rows[1]["prompt_tokens"], 3);
}

}  // namespace
}  // namespace strata
