// Whole models in the GGUF types beyond Q4_0/Q8_0/Q4_K/Q6_K: files that mix them load
// and run forward with the kernels of this CPU, and agree with an F32 model holding the
// same (dequantized) weights; hostile files (NaN/Inf scales, sizes that do not match the
// type) fail to load with an error naming the tensor, or run without a crash.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "convert/make_model.h"
#include "convert/quantize.h"
#include "core/error.h"
#include "gguf/gguf.h"
#include "kernels/quant/traits.h"
#include "model/model.h"
#include "support/engine_runs.h"
#include "support/paths.h"
#include "support/process.h"

namespace strata {
namespace {

// A random-weight model whose every matrix divides into 256-element super-blocks.
const std::string& f32_model() {
  static const std::string path = [] {
    MakeModelOptions o;
    o.preset = "tiny-256";
    o.output_path = testing::scratch_dir() + "/tiny256.f32.gguf";
    o.vocab_path = testing::shared_dir() + "/vocab/ggml-vocab-llama-spm.gguf";
    o.context_length = 512;
    o.seed = 21;
    o.type = DType::F32;
    make_model(o);
    return o.output_path;
  }();
  return path;
}

// Copies `in` with each 2-D tensor re-encoded as type_of(name, index) (F32 keeps it), and
// writes beside it the F32 model of the same weights as they decode, when `twin` is set.
template <class TypeOf>
void write_mix(const std::string& in_path, const std::string& out, const std::string& twin,
               TypeOf type_of) {
  const auto in = gguf::GgufFile::open(in_path);
  gguf::GgufWriter mixed, decoded;
  for (const auto& [key, value] : in.metadata()) {
    mixed.set_value(key, value);
    decoded.set_value(key, value);
  }
  int index = 0;
  for (const auto& t : in.tensors()) {
    const uint8_t* data = in.tensor_data(t);
    const size_t n = static_cast<size_t>(t.n_elements);
    const DType type = t.ne.size() == 2 ? type_of(t.name, index++) : DType::F32;
    std::vector<float> values(n);
    kernels::type_traits(t.type).to_float(data, values.data(), static_cast<int64_t>(n));
    const int64_t cols = t.ne[0], rows = static_cast<int64_t>(n) / cols;
    const std::vector<uint8_t> bytes = encode_rows(values.data(), rows, cols, type);
    mixed.add_tensor(t.name, type, t.ne, bytes.data(), bytes.size());
    std::vector<float> back(n);
    const int64_t row_bytes = kernels::row_bytes(type, cols);
    for (int64_t r = 0; r < rows; ++r) {
      kernels::type_traits(type).to_float(bytes.data() + r * row_bytes, back.data() + r * cols,
                                          cols);
    }
    decoded.add_tensor(t.name, DType::F32, t.ne, back.data(), n * sizeof(float));
  }
  mixed.write(out);
  if (!twin.empty()) decoded.write(twin);
}

std::vector<int32_t> prompt() {
  std::vector<int32_t> p;
  for (int i = 0; i < 24; ++i) p.push_back(1 + (i * 977) % 31999);
  return p;
}

// Max |a - b| over all logits relative to max |b|.
double relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  double max_abs = 0, max_diff = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    max_abs = std::max(max_abs, std::fabs(static_cast<double>(want[i])));
    max_diff = std::max(max_diff, std::fabs(static_cast<double>(got[i]) - want[i]));
  }
  return max_diff / max_abs;
}

void expect_matches_decoded_twin(const std::vector<DType>& types, const std::string& name) {
  const std::string out = testing::scratch_dir() + "/" + name + ".gguf";
  const std::string twin = testing::scratch_dir() + "/" + name + ".decoded.gguf";
  write_mix(f32_model(), out, twin, [&](const std::string&, int i) {
    return types[static_cast<size_t>(i) % types.size()];
  });
  auto model = Model::load(out);
  auto reference = Model::load(twin);
  std::vector<DType> seen;
  for (const auto& t : model->file().tensors())
    if (t.ne.size() == 2) seen.push_back(t.type);
  for (DType t : types)
    EXPECT_NE(std::find(seen.begin(), seen.end(), t), seen.end()) << dtype_name(t);
  ThreadPool pool(2);
  const std::vector<float> got = testing::prompt_logits(*model, pool, prompt());
  const std::vector<float> want = testing::prompt_logits(*reference, pool, prompt());
  ASSERT_EQ(got.size(), want.size());
  for (float v : got) ASSERT_TRUE(std::isfinite(v));
  // The same weights: only the activations' 8-bit quantization (Q8_0 / Q8_K) separates the
  // two, through 2 layers and the classifier. Measured: 0.029 for this K mix, 0.020 for the
  // legacy mix, 0.027 for a Q4_K/Q6_K mix and 0.018 for Q4_0/Q8_0 (the types that were
  // there before), the same at the scalar level (STRATA_NO_AVX2=1); a wrong bit or scale
  // in a layout gives errors of order 1.
  const double err = relative_error(got, want);
  ::testing::Test::RecordProperty("relative_error", std::to_string(err));
  std::printf("%s: relative logit error against the decoded twin %.5f\n", name.c_str(), err);
  EXPECT_LT(err, 0.05) << name;
  // The greedy continuation runs too (a few tokens, the decode path).
  EXPECT_EQ(testing::greedy_tokens(*model, pool, prompt(), 4).size(), 4u);
}

TEST(QuantTypesModel, KQuantMixLoadsAndMatchesItsDecodedWeights) {
  expect_matches_decoded_twin(
      {DType::Q5_K, DType::Q6_K, DType::Q4_K, DType::Q3_K, DType::Q2_K, DType::IQ4_XS},
      "tiny256.kmix");
}

TEST(QuantTypesModel, LegacyMixLoadsAndMatchesItsDecodedWeights) {
  expect_matches_decoded_twin(
      {DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::IQ4_NL, DType::Q4_0, DType::Q8_0},
      "tiny256.legacymix");
}

// `strata quantize --type q5_k_m` gives the recipe's mix: attn_v / ffn_down of the last
// layer (the last eighth) Q6_K, the other matrices Q5_K, the classifier Q6_K.
TEST(QuantTypesModel, QuantizeQ5_K_MWritesTheMix) {
  const std::string out = testing::scratch_dir() + "/tiny256.q5_k_m.gguf";
  const auto r = testing::run_command(testing::strata_bin() + " quantize '" + f32_model() + "' '" +
                                      out + "' --type q5_k_m 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto model = Model::load(out);
  const auto& f = model->file();
  EXPECT_EQ(f.tensor("blk.0.attn_q.weight").type, DType::Q5_K);
  EXPECT_EQ(f.tensor("blk.0.attn_v.weight").type, DType::Q5_K);
  EXPECT_EQ(f.tensor("blk.1.attn_v.weight").type, DType::Q6_K);
  EXPECT_EQ(f.tensor("blk.1.ffn_down.weight").type, DType::Q6_K);
  EXPECT_EQ(f.tensor("output.weight").type, DType::Q6_K);
  EXPECT_EQ(f.get_uint("general.file_type"), 17u);
  ThreadPool pool(2);
  EXPECT_EQ(testing::greedy_tokens(*model, pool, prompt(), 4).size(), 4u);
  const auto bad = testing::run_command(testing::strata_bin() + " quantize '" + f32_model() +
                                        "' '" + out + ".x' --type q6_k_m 2>&1");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.out.find("q6_k_m"), std::string::npos) << bad.out;
}

// A file whose Q5_K / Q4_1 / IQ4_XS blocks hold NaN and infinite fp16 scales: it loads (the
// blocks are well-formed bytes; checking every scale of a multi-GB file at load would cost a
// pass over it) and runs forward without a crash. The logits are then not finite, and the
// greedy continuation still produces tokens (argmax over NaN must not index out of range).
TEST(QuantTypesModel, NanAndInfScalesLoadAndRunWithoutCrash) {
  const std::string out = testing::scratch_dir() + "/tiny256.hostile_scales.gguf";
  const DType types[] = {DType::Q5_K, DType::Q4_1, DType::IQ4_XS};
  {
    const std::string clean = out + ".clean";
    write_mix(f32_model(), clean, "", [&](const std::string&, int i) { return types[i % 3]; });
    auto in = gguf::GgufFile::open(clean);
    gguf::GgufWriter w;
    for (const auto& [key, value] : in.metadata()) w.set_value(key, value);
    const uint16_t specials[] = {0x7e00, 0x7c00, 0xfc00};
    for (const auto& t : in.tensors()) {
      std::vector<uint8_t> bytes(in.tensor_data(t), in.tensor_data(t) + t.n_bytes);
      if (t.ne.size() == 2 && t.name != "token_embd.weight") {
        const size_t bs = dtype_info(t.type).type_size;
        for (size_t b = 0; b < bytes.size() / bs; b += 7)  // d is at offset 0 in all three
          std::memcpy(bytes.data() + b * bs, &specials[b % 3], 2);
      }
      w.add_tensor(t.name, t.type, t.ne, bytes.data(), bytes.size());
    }
    w.write(out);
  }
  auto model = Model::load(out);
  ThreadPool pool(2);
  const std::vector<float> logits = testing::prompt_logits(*model, pool, prompt());
  bool any_non_finite = false;
  for (float v : logits) any_non_finite = any_non_finite || !std::isfinite(v);
  EXPECT_TRUE(any_non_finite);
  const auto tokens = testing::greedy_tokens(*model, pool, prompt(), 3);
  ASSERT_EQ(tokens.size(), 3u);
  for (int32_t t : tokens) {
    EXPECT_GE(t, 0);
    EXPECT_LT(t, model->config().n_vocab);
  }
}

// Sizes that do not match the type: a Q5_K tensor whose rows are not whole super-blocks,
// and a file cut short inside an IQ4_XS tensor's data, are refused at load, naming it.
TEST(QuantTypesModel, SizeMismatchesFailToLoadNamingTheTensor) {
  const std::string dir = testing::scratch_dir();
  {
    gguf::GgufWriter w;
    w.set_string("general.architecture", "llama");
    std::vector<uint8_t> zeros(2 * 176);
    w.add_tensor("blk.0.attn_q.weight", DType::Q5_K, {256, 2}, zeros.data(), zeros.size());
    std::vector<uint8_t> buf = w.write_to_buffer();
    // Rewrite the row length 256 of the tensor's shape as 320 (not a multiple of 256).
    const std::string name = "blk.0.attn_q.weight";
    auto it = std::search(buf.begin(), buf.end(), name.begin(), name.end());
    ASSERT_NE(it, buf.end());
    const size_t ne0_at = static_cast<size_t>(it - buf.begin()) + name.size() + 4;  // after n_dims
    uint64_t ne0;
    std::memcpy(&ne0, buf.data() + ne0_at, 8);
    ASSERT_EQ(ne0, 256u);
    ne0 = 320;
    std::memcpy(buf.data() + ne0_at, &ne0, 8);
    const std::string path = dir + "/bad_q5k_rows.gguf";
    std::FILE* f = std::fopen(path.c_str(), "wb");
    std::fwrite(buf.data(), 1, buf.size(), f);
    std::fclose(f);
    try {
      gguf::GgufFile::open(path);
      FAIL() << "opened a Q5_K tensor with 320-element rows";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("blk.0.attn_q.weight"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("q5_k"), std::string::npos) << e.what();
    }
  }
  {
    gguf::GgufWriter w;
    w.set_string("general.architecture", "llama");
    std::vector<uint8_t> zeros(4 * 136);
    w.add_tensor("blk.0.ffn_up.weight", DType::IQ4_XS, {512, 2}, zeros.data(), zeros.size());
    std::vector<uint8_t> buf = w.write_to_buffer();
    buf.resize(buf.size() - 100);  // cut inside the tensor's data
    const std::string path = dir + "/truncated_iq4xs.gguf";
    std::FILE* f = std::fopen(path.c_str(), "wb");
    std::fwrite(buf.data(), 1, buf.size(), f);
    std::fclose(f);
    try {
      gguf::GgufFile::open(path);
      FAIL() << "opened a file cut inside an IQ4_XS tensor";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("blk.0.ffn_up.weight"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace strata
