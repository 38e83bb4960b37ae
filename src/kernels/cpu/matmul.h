// Matrix multiplication of a weight matrix (any type with a vec_dot in kernels/quant/traits.h)
// by a batch of float activation rows, on the CPU thread pool.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/dtype.h"
#include "core/thread_pool.h"

namespace strata::kernels {

// Optional work of a matmul besides its rows. Results are those of doing it separately.
struct MatmulHooks {
  // prepare(prepare_ctx) writes x (say, the RMSNorm of the residual stream). It runs once,
  // on the calling thread, before x is read; a one-token matmul on several threads runs it
  // and the conversion inside its pool job while the other threads prefetch the start of
  // their weights. It must not throw.
  void (*prepare)(void* ctx) = nullptr;
  void* prepare_ctx = nullptr;
  // prepare_rows(prepare_rows_ctx, t0, t1) writes rows [t0, t1) of x (say, the RMSNorm of
  // those tokens). Each row is prepared once, after `prepare`, by the thread that converts
  // it to the kernels' input type, just before converting it: the row is read back from
  // L1 instead of from a separate pass over the whole batch (and its pool dispatch). It
  // must not throw, and rows may be prepared concurrently.
  void (*prepare_rows)(void* ctx, int64_t t0, int64_t t1) = nullptr;
  void* prepare_rows_ctx = nullptr;
};

// The prepare hook from a callable fn(), which must outlive the matmul.
template <class Prepare>
void set_prepare(MatmulHooks& h, Prepare& fn) {
  h.prepare = [](void* ctx) { (*static_cast<Prepare*>(ctx))(); };
  h.prepare_ctx = &fn;
}

// The prepare_rows hook from a callable fn(t0, t1), which must outlive the matmul.
template <class PrepareRows>
void set_prepare_rows(MatmulHooks& h, PrepareRows& fn) {
  h.prepare_rows = [](void* ctx, int64_t t0, int64_t t1) {
    (*static_cast<PrepareRows*>(ctx))(t0, t1);
  };
  h.prepare_rows_ctx = &fn;
}

// The alignment matmul requires of a weight matrix of type `wtype` (its block struct's:
// 2 bytes for the fp16-scaled blocks and F16/BF16, 4 for F32). Weight binding checks it
// at load, so a file with misaligned tensors is refused there, naming the tensor.
inline size_t matmul_weight_alignment(DType wtype) {
  return wtype == DType::F32 ? 4 : 2;
}

// y[t*rows + r] = dot(W row r, x row t) for t in [0,n_tokens), r in [0,rows).
// W: `rows` rows of `cols` elements of type `wtype`, each row stored contiguously
//    (row_bytes(wtype, cols) bytes), aligned to its block struct (2 bytes; 4 for F32).
// x: n_tokens x cols floats.  y: n_tokens x rows floats.
// Activations are converted to the weight type's vec_dot_type once per token row into
// `scratch`, which grows as needed and is reused (no allocation once it is big enough;
// F32/F16/BF16 weights use x directly and leave scratch alone).
// Rows are split across the pool's threads in L2-sized panels, and each panel is computed
// by the type's register-blocked gemm kernel (several rows x several tokens per inner loop,
// so a weight block loaded once serves many tokens). Every y[t*rows + r] is bit-identical
// to vec_dot(W row r, x row t), so results do not depend on n_tokens, on the other tokens
// of the batch or on the number of threads. Throws strata::Error on unsupported types or invalid
// shapes.
void matmul(DType wtype, const void* w, int64_t rows, int64_t cols, const float* x,
            int64_t n_tokens, float* y, ThreadPool& pool, std::vector<uint8_t>& scratch,
            const MatmulHooks& hooks = {});

// One weight matrix of a matmul_shared_input call, with its output (n_tokens x rows).
struct MatmulJob {
  DType wtype;
  const void* w;
  int64_t rows;
  float* y;
};

// At most this many matrices share one input: Q, K, V; or the gate and up matrices of a
// decode token's experts (2 x top-k, 8 at most for one call).
inline constexpr size_t kMaxSharedInputJobs = 16;

// Several matmuls of the same input x (n_tokens x cols), such as the Q, K and V projections:
// x is converted once per distinct vec_dot type and the rows of all matrices are split
// across the pool in one dispatch, instead of one conversion and one dispatch (with a wait
// for the slowest thread) per matrix. Outputs are bit-identical to separate matmul() calls.
void matmul_shared_input(std::span<const MatmulJob> jobs, int64_t cols, const float* x,
                         int64_t n_tokens, ThreadPool& pool, std::vector<uint8_t>& scratch,
                         const MatmulHooks& hooks = {});

}  // namespace strata::kernels
