// Calibration runs (eval/calib_run.h) on a tiny random model built in process: the
// activation statistics the matmul observer collects match the inputs recomputed by
// hand, and bad calibration texts give clear errors.
#include "eval/calib_run.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include "convert/imatrix.h"
#include "convert/make_model.h"
#include "core/error.h"
#include "kernels/quant/traits.h"
#include "support/paths.h"

namespace strata {
namespace {

const std::string& tiny_model() {
  static const std::string path = [] {
    MakeModelOptions o;
    o.preset = "tiny";
    // One file per process: CTest runs this file's tests as concurrent processes.
    o.output_path =
        ::testing::TempDir() + "/strata_calib_tiny_" + std::to_string(::getpid()) + ".gguf";
    o.vocab_path = testing::shared_dir() + "/vocab/ggml-vocab-llama-spm.gguf";
    o.context_length = 64;
    o.seed = 5;
    make_model(o);
    return o.output_path;
  }();
  return path;
}

// One window of 16 tokens for the sensitivity probes.
CalibWindows one_window() {
  CalibWindows w;
  w.plan = plan_perplexity(16, 16);
  w.windows.push_back({1, 5, 9, 200, 17, 33, 400, 2, 8, 99, 123, 7, 6, 5, 4, 3});
  return w;
}

TEST(CalibRun, ObserverCollectsMatmulInputs) {
  auto model = Model::load(tiny_model());
  const auto& c = model->config();
  CalibWindows w;
  w.plan = plan_perplexity(32, 16);  // two windows of 16 tokens
  for (int k = 0; k < 2; ++k) {
    std::vector<int32_t> win;
    for (int i = 0; i < 16; ++i) win.push_back((i * 37 + k * 11 + 3) % 1000);
    w.windows.push_back(win);
  }
  Imatrix im;
  ImatrixCollector collector(*model, im);
  const auto logp = run_windows(*model, w, 1, &collector);
  EXPECT_EQ(logp.size(), 2u * 7 * static_cast<size_t>(c.n_vocab));
  // Every layer matrix saw every token; the classifier only the rows scored (8 of 16).
  EXPECT_EQ(im.tensors().size(), static_cast<size_t>(7 * c.n_layers + 1));
  EXPECT_EQ(im.tensors().at("blk.1.ffn_down.weight").count, 32u);
  EXPECT_EQ(im.tensors().at("blk.1.ffn_down.weight").sum_sq.size(), static_cast<size_t>(c.ffn_dim));
  EXPECT_EQ(im.tensors().at("output.weight").count, 16u);
  // Layer 0's q/k/v input is the RMS-normed embedding (norm weights are 1 in make_model).
  std::vector<double> want(static_cast<size_t>(c.dim), 0.0);
  std::vector<float> row(static_cast<size_t>(c.dim));
  const auto& embd = model->weights().token_embd;
  for (const auto& win : w.windows)
    for (const int32_t t : win) {
      kernels::type_traits(embd.type).to_float(embd.row(t), row.data(), c.dim);
      double ss = 0;
      for (float v : row) ss += static_cast<double>(v) * v;
      const double inv = 1.0 / std::sqrt(ss / static_cast<double>(c.dim) + c.rms_eps);
      for (int64_t j = 0; j < c.dim; ++j)
        want[static_cast<size_t>(j)] +=
            row[static_cast<size_t>(j)] * inv * row[static_cast<size_t>(j)] * inv;
    }
  for (const char* n : {"blk.0.attn_q.weight", "blk.0.attn_k.weight", "blk.0.attn_v.weight"}) {
    const auto& got = im.tensors().at(n).sum_sq;
    for (int64_t j = 0; j < c.dim; ++j)
      EXPECT_NEAR(got[static_cast<size_t>(j)], want[static_cast<size_t>(j)],
                  1e-3 * want[static_cast<size_t>(j)] + 1e-6)
          << n << " column " << j;
  }
  // Without an observer the logits are the same, and nothing more is collected.
  const auto again = run_windows(*model, w, 1);
  EXPECT_EQ(again, logp);
  EXPECT_EQ(im.tensors().at("output.weight").count, 16u);
  EXPECT_DOUBLE_EQ(mean_kld(logp, again, c.n_vocab), 0.0);
}

TEST(CalibRun, SensitivityOfOneTensor) {
  const auto src = gguf::GgufFile::open(tiny_model());
  auto model = Model::load(tiny_model());
  const CalibWindows w = one_window();
  const auto ref = run_windows(*model, w, 1);
  QuantizeOptions base;
  const auto s = measure_sensitivity(
      *model, src, {{"blk.0.ffn_up.weight", {DType::Q4_0, DType::Q8_0}}}, base, w, ref, 1);
  const double q4 = s.at("blk.0.ffn_up.weight").at(DType::Q4_0);
  const double q8 = s.at("blk.0.ffn_up.weight").at(DType::Q8_0);
  EXPECT_GT(q4, q8);
  EXPECT_GT(q8, 0.0);
  EXPECT_THROW(measure_sensitivity(*model, src, {{"nope", {DType::Q4_0}}}, base, w, ref, 1), Error);
}

// A probe rebinds one matrix of the loaded model; it must measure what a model rebuilt
// from the quantized file measures (the same bytes through the same kernels), and leave
// the model as it was.
TEST(CalibRun, RebindingProbeEqualsARebuiltModel) {
  const auto src = gguf::GgufFile::open(tiny_model());
  auto model = Model::load(tiny_model());
  const CalibWindows w = one_window();
  const auto ref = run_windows(*model, w, 2);
  QuantizeOptions base;
  const std::map<std::string, std::vector<DType>> cand = {
      {"token_embd.weight", {DType::Q5_1}},
      {"output.weight", {DType::Q8_0, DType::Q4_0}},
      {"blk.1.attn_v.weight", {DType::Q8_0, DType::IQ4_NL}},
      {"blk.0.ffn_down.weight", {DType::Q5_0}}};
  for (const auto& [name, types] : cand) ASSERT_NE(model->mutable_matrix(name), nullptr) << name;
  EXPECT_EQ(model->mutable_matrix("blk.0.attn_norm.weight"), nullptr);
  EXPECT_EQ(model->mutable_matrix("blk.99.attn_q.weight"), nullptr);
  const auto s = measure_sensitivity(*model, src, cand, base, w, ref, 2);
  for (const auto& [name, types] : cand) {
    for (const DType type : types) {
      QuantizeOptions o = base;
      o.keep_others = true;
      o.tensor_types = {{name, type}};
      auto rebuilt =
          Model::from_file(gguf::GgufFile::from_buffer(quantize_to_buffer(src, o), "probe"), true);
      const double want = mean_kld(ref, run_windows(*rebuilt, w, 2), rebuilt->config().n_vocab);
      EXPECT_GT(want, 0.0) << name;
      EXPECT_DOUBLE_EQ(s.at(name).at(type), want) << name << " " << dtype_name(type);
    }
  }
  EXPECT_EQ(run_windows(*model, w, 2), ref);  // every matrix restored
}

TEST(CalibRun, BadCalibrationTexts) {
  auto model = Model::load(tiny_model());
  EXPECT_THROW(calib_windows(*model, ::testing::TempDir() + "/strata_no_such_calib.txt", 16),
               Error);
  const std::string empty = ::testing::TempDir() + "/strata_calib_empty.txt";
  std::ofstream(empty) << "";
  try {
    calib_windows(*model, empty, 16);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("empty"), std::string::npos);
  }
  const std::string shorty = ::testing::TempDir() + "/strata_calib_short.txt";
  std::ofstream(shorty) << "Once upon a time";
  try {
    calib_windows(*model, shorty, 64);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fewer than one window"), std::string::npos);
  }
  std::remove(empty.c_str());
  std::remove(shorty.c_str());
}

}  // namespace
}  // namespace strata
