#include "kernels/cpu/matmul.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "kernels/quant/traits.h"

namespace strata::kernels {
namespace {

// A panel of weight rows this large stays in L2 while every token of the batch passes
// over it, so prefill reads each weight row from memory once.
constexpr int64_t kRowBlockBytes = 256 * 1024;

// Threads get whole groups of this many rows, the GEMV tile height of the AVX2 kernels.
constexpr int64_t kRowGrain = 4;

using GemmFn = void (*)(int64_t, const void*, int64_t, int64_t, const void*, int64_t, int64_t,
                        float*, int64_t);

struct MatmulPlan {
  const uint8_t* w;  // rows x w_row_bytes
  int64_t w_row_bytes;
  int64_t rows;
  int64_t cols;
  const uint8_t* act;  // n_tokens x act_row_bytes, already in vec_dot_type
  int64_t act_row_bytes;
  int64_t n_tokens;
  float* y;  // n_tokens x rows
  GemmFn gemm;
};

// Computes y for weight rows [r0, r1) and every token, one L2-sized panel of rows at a
// time. The gemm kernel tiles rows x tokens, and every output it writes is bit-identical
// to vec_dot's, so neither the panel nor the thread split changes results.
void compute_rows(const MatmulPlan& p, int64_t r0, int64_t r1) {
  const int64_t panel = std::max<int64_t>(kRowGrain, kRowBlockBytes / p.w_row_bytes);
  for (int64_t rb = r0; rb < r1; rb += panel) {
    const int64_t re = std::min(r1, rb + panel);
    p.gemm(p.cols, p.w + rb * p.w_row_bytes, p.w_row_bytes, re - rb, p.act, p.act_row_bytes,
           p.n_tokens, p.y + rb, p.rows);
  }
}

void check_args(DType wtype, const void* w, int64_t rows, int64_t cols, const float* x,
                int64_t n_tokens, const float* y) {
  if (rows < 0 || cols < 0 || n_tokens < 0) {
    throw Error("matmul: negative shape (rows=" + std::to_string(rows) +
                ", cols=" + std::to_string(cols) + ", n_tokens=" + std::to_string(n_tokens) + ")");
  }
  if (rows == 0 || n_tokens == 0) return;
  if (w == nullptr || y == nullptr || (x == nullptr && cols > 0)) {
    throw Error("matmul: null weight, activation or output pointer");
  }
  const uintptr_t align = wtype == DType::F32 ? 4 : 2;
  if (reinterpret_cast<uintptr_t>(w) % align != 0) {
    throw Error("matmul: weights of type " + std::string(dtype_name(wtype)) +
                " must be aligned to " + std::to_string(align) + " bytes");
  }
}

}  // namespace

void matmul(DType wtype, const void* w, int64_t rows, int64_t cols, const float* x,
            int64_t n_tokens, float* y, ThreadPool& pool, std::vector<uint8_t>& scratch) {
  check_args(wtype, w, rows, cols, x, n_tokens, y);
  const TypeTraits& wt = type_traits(wtype);
  if (wt.vec_dot == nullptr || wt.gemm == nullptr) {
    throw Error("matmul: " + std::string(dtype_name(wtype)) + " is not a weight type");
  }
  MatmulPlan plan{};
  plan.w = static_cast<const uint8_t*>(w);
  plan.w_row_bytes = row_bytes(wtype, cols, "matmul cols");
  plan.rows = rows;
  plan.cols = cols;
  plan.n_tokens = n_tokens;
  plan.y = y;
  plan.gemm = wt.gemm;
  plan.act_row_bytes = row_bytes(wt.vec_dot_type, cols, "matmul cols");
  if (rows == 0 || n_tokens == 0) return;

  if (wt.vec_dot_type == DType::F32) {
    plan.act = reinterpret_cast<const uint8_t*>(x);
  } else {
    const size_t need = static_cast<size_t>(plan.act_row_bytes * n_tokens);
    if (scratch.size() < need) scratch.resize(need);
    uint8_t* act = scratch.data();
    const auto convert = type_traits(wt.vec_dot_type).from_float;
    auto convert_tokens = [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t)
        convert(x + t * cols, act + t * plan.act_row_bytes, cols);
    };
    if (n_tokens > 1 && pool.size() > 1) {
      pool.parallel_for(n_tokens, convert_tokens);
    } else {
      convert_tokens(0, n_tokens);
    }
    plan.act = act;
  }
  const int64_t groups = (rows + kRowGrain - 1) / kRowGrain;
  pool.parallel_for(groups, [&](int64_t g0, int64_t g1) {
    compute_rows(plan, g0 * kRowGrain, std::min(rows, g1 * kRowGrain));
  });
}

}  // namespace strata::kernels
