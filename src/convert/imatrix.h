// Per-input-channel activation statistics for `strata quantize --calib` (issue 21,
// part 3), as llama.cpp's imatrix collects them: for each matmul weight tensor, the sum
// over the calibration tokens of x_j^2 for every input column j, and the token count.
// The mean (sum / count) is the importance that weights a column's rounding error in the
// scale searches (convert/weighted_quant.h): an error in column j of row r shifts that
// row's output by err * x_j, whose expected square is err^2 * E[x_j^2].
//
// File (--save-imatrix / --imatrix), little-endian:
//   char magic[8] = "STRIMX01"; u32 n_tensors;
//   per tensor: u32 name_len; char name[name_len]; u32 n_cols; u64 count;
//               f32 sum_sq[n_cols]
// Read back as hostile: every length is bounded by the file's size, names are unique,
// values finite and >= 0, and nothing may follow the last tensor.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/model.h"

namespace strata {

struct ChannelStats {
  std::vector<double> sum_sq;  // per input column
  uint64_t count = 0;          // tokens seen
};

class Imatrix {
 public:
  // Adds n_tokens rows of `cols` inputs to tensor `name`; throws Error when `cols`
  // differs from what the tensor had.
  void add(const std::string& name, const float* x, int64_t n_tokens, int64_t cols);
  // The mean square per column of `name` (sum_sq / count), or empty when the tensor
  // was never seen or saw no tokens.
  std::vector<float> importance(const std::string& name) const;
  const std::map<std::string, ChannelStats>& tensors() const { return tensors_; }
  bool empty() const { return tensors_.empty(); }

  void save(const std::string& path) const;
  static Imatrix load(const std::string& path);

 private:
  std::map<std::string, ChannelStats> tensors_;
};

// A MatmulObserver that files each dense matmul's input under its GGUF tensor name
// (blk.N.attn_q.weight, ..., output.weight, or token_embd.weight when the classifier is
// tied to the embedding). Inputs of matrices it does not know (MoE, MLA) are ignored.
class ImatrixCollector final : public MatmulObserver {
 public:
  ImatrixCollector(const Model& model, Imatrix& out);
  void observe(const void* weight, const float* x, int64_t n_tokens, int64_t cols) override;

 private:
  std::map<const void*, std::string> names_;
  Imatrix& out_;
};

}  // namespace strata
