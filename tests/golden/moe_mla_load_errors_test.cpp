// Hostile MoE / MLA files: metadata that contradicts itself or the tensors is refused at
// load with an error naming the key or the tensor.
#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "convert/make_model.h"
#include "core/error.h"
#include "gguf/gguf.h"
#include "gguf/writer.h"
#include "model/model.h"
#include "support/paths.h"

namespace strata {
namespace {

std::string make(const std::string& preset) {
  MakeModelOptions o;
  o.preset = preset;
  o.output_path = testing::scratch_dir() + "/errors-" + preset + ".gguf";
  o.vocab_path = testing::shared_dir() + "/vocab/ggml-vocab-llama-spm.gguf";
  o.context_length = 256;
  o.type = DType::F32;
  make_model(o);
  return o.output_path;
}

// A copy of `in` with `edit` applied to a writer that already holds every key but those
// in `drop`, and every tensor but those in `drop_tensors`.
std::string edited(const std::string& in, const std::string& name,
                   const std::function<void(gguf::GgufWriter&)>& edit,
                   const std::set<std::string>& drop = {},
                   const std::set<std::string>& drop_tensors = {}) {
  const auto f = gguf::GgufFile::open(in);
  gguf::GgufWriter w;
  for (const auto& [key, value] : f.metadata())
    if (!drop.count(key)) w.set_value(key, value);
  for (const auto& t : f.tensors()) {
    if (!drop_tensors.count(t.name))
      w.add_tensor(t.name, t.type, t.ne, f.tensor_data(t), static_cast<size_t>(t.n_bytes));
  }
  edit(w);
  const std::string out = testing::scratch_dir() + "/" + name + ".gguf";
  w.write(out);
  return out;
}

std::string load_error(const std::string& path) {
  try {
    Model::load(path, Model::WeightMemory::mmap);
  } catch (const Error& e) {
    return e.what();
  }
  return "(loaded)";
}

TEST(MoeLoadErrors, ExpertCountZero) {
  const std::string p =
      edited(make("qwen3moe-tiny"), "count0",
             [](auto& w) { w.set_u32("qwen3moe.expert_count", 0); }, {"qwen3moe.expert_count"});
  const std::string e = load_error(p);
  EXPECT_NE(e.find("qwen3moe.expert_count = 0 is out of range"), std::string::npos) << e;
}

TEST(MoeLoadErrors, TopKAboveExpertCount) {
  const std::string p = edited(make("qwen3moe-tiny"), "topk",
                               [](auto& w) { w.set_u32("qwen3moe.expert_used_count", 9); },
                               {"qwen3moe.expert_used_count"});
  const std::string e = load_error(p);
  EXPECT_NE(e.find("qwen3moe.expert_used_count = 9 is out of range (1..8)"), std::string::npos)
      << e;
}

TEST(MoeLoadErrors, MoeArchitectureWithoutExperts) {
  const std::string p =
      edited(make("qwen3moe-tiny"), "nocount", [](auto&) {}, {"qwen3moe.expert_count"});
  const std::string e = load_error(p);
  EXPECT_NE(e.find("qwen3moe.expert_count"), std::string::npos) << e;
}

// The expert stacks' third dimension must be expert_count (a 4-expert stack in an
// 8-expert file would read past the tensor).
TEST(MoeLoadErrors, ExpertTensorThirdDimensionDisagrees) {
  const std::string name = "blk.1.ffn_up_exps.weight";
  std::vector<float> four(static_cast<size_t>(128 * 64 * 4), 0.01f);
  const std::string p =
      edited(make("qwen3moe-tiny"), "dim3",
             [&](auto& w) {
               w.add_tensor(name, DType::F32, {128, 64, 4}, four.data(), four.size() * 4);
             },
             {}, {name});
  const std::string e = load_error(p);
  EXPECT_NE(e.find("tensor '" + name + "' has shape [128, 64, 4], expected [128, 64, 8]"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("expert_count = 8"), std::string::npos) << e;
}

TEST(MoeLoadErrors, ExpertFfnLengthDisagreesWithTensors) {
  const std::string p =
      edited(make("qwen3moe-tiny"), "ffn",
             [](auto& w) { w.set_u32("qwen3moe.expert_feed_forward_length", 32); },
             {"qwen3moe.expert_feed_forward_length"});
  const std::string e = load_error(p);
  EXPECT_NE(e.find("tensor 'blk.0.ffn_gate_exps.weight' has shape [128, 64, 8]"), std::string::npos)
      << e;
}

TEST(MlaLoadErrors, KvLoraRankDisagreesWithKeyLength) {
  const std::string p = edited(make("deepseek2-tiny"), "lora-key",
                               [](auto& w) { w.set_u32("deepseek2.attention.kv_lora_rank", 32); },
                               {"deepseek2.attention.kv_lora_rank"});
  const std::string e = load_error(p);
  EXPECT_NE(e.find("attention.key_length (96) must be kv_lora_rank + rope.dimension_count (64)"),
            std::string::npos)
      << e;
}

// A legacy file has no key_length consistency to check; the tensors' shapes catch it.
TEST(MlaLoadErrors, KvLoraRankDisagreesWithTensors) {
  const std::string p = edited(make("deepseek2-tiny-fused"), "lora-tensor",
                               [](auto& w) { w.set_u32("deepseek2.attention.kv_lora_rank", 32); },
                               {"deepseek2.attention.kv_lora_rank"});
  const std::string e = load_error(p);
  EXPECT_NE(e.find("tensor 'blk.0.attn_kv_a_mqa.weight' has shape [128, 96], expected [128, 64]"),
            std::string::npos)
      << e;
}

TEST(MlaLoadErrors, GroupLimitedRoutingIsRefused) {
  const std::string p = edited(make("deepseek2-tiny"), "groups",
                               [](auto& w) { w.set_u32("deepseek2.expert_group_count", 4); });
  const std::string e = load_error(p);
  EXPECT_NE(e.find("expert_group_count > 1"), std::string::npos) << e;
}

TEST(MoeLoadErrors, TheUneditedFilesLoad) {
  EXPECT_EQ(load_error(make("qwen3moe-tiny")), "(loaded)");
  EXPECT_EQ(load_error(make("deepseek2-tiny")), "(loaded)");
  EXPECT_EQ(load_error(make("deepseek2-tiny-fused")), "(loaded)");
}

}  // namespace
}  // namespace strata
