#include "kernels/cpu/matmul.h"

#include <algorithm>
#include <atomic>
#include <string>

#include "core/error.h"
#include "core/prefetch.h"
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
  int64_t first_group;  // this plan's groups of kRowGrain rows in the shared index space
  int64_t n_groups;
};

// Computes y for weight rows [r0, r1) and every token, one L2-sized panel of rows at a
// time. The gemm kernel tiles rows x tokens, and every output it writes is bit-identical
// to vec_dot's, so neither the panel nor the thread split changes results.
void compute_rows(const MatmulPlan& p, int64_t r0, int64_t r1) {
  // Whole groups of kRowGrain rows: an odd panel (227 rows of Q4_0 at 2048 columns) left
  // one row per panel to the kernels' slower single-row tile.
  const int64_t panel =
      std::max<int64_t>(kRowGrain, kRowBlockBytes / p.w_row_bytes / kRowGrain * kRowGrain);
  for (int64_t rb = r0; rb < r1; rb += panel) {
    const int64_t re = std::min(r1, rb + panel);
    p.gemm(p.cols, p.w + rb * p.w_row_bytes, p.w_row_bytes, re - rb, p.act, p.act_row_bytes,
           p.n_tokens, p.y + rb, p.rows);
  }
}

// Row groups are split between threads by ThreadPool::parallel_for_stealing: each thread
// streams its own contiguous share, and the first to finish takes half of what another
// has not yet claimed. Threads claim their own groups this many at a time:
//  - Decode (one token): about kDecodeClaimBytes of weights, so threads finish within a
//    few microseconds of each other. With chunks of at least 256 rows from one shared
//    counter, the last chunk alone was 5-14 us of one thread's streaming at llama-1b's
//    shapes, and the other thread waited for it in each of the 89 matmuls of a token.
//  - Batches: kBatchClaimGroups (256 rows), so that a row panel (compute_rows) is still
//    reused by every token of the batch; smaller claims measured 30% slower at batch 16.
// With many threads the batch claim shrinks so that every thread still gets work.
constexpr int64_t kDecodeClaimBytes = 32 * 1024;
constexpr int64_t kBatchClaimGroups = 64;

int64_t claim_groups(int64_t n_groups, int n_threads, int64_t n_tokens, int64_t w_row_bytes) {
  if (n_tokens == 1)
    return std::max<int64_t>(1,
                             kDecodeClaimBytes / (kRowGrain * std::max<int64_t>(1, w_row_bytes)));
  return std::clamp<int64_t>(n_groups / (2 * static_cast<int64_t>(n_threads)), 1,
                             kBatchClaimGroups);
}

// A decode matmul's other threads prefetch up to this much of their first claim while the
// calling thread prepares and converts the input (matmul_shared_input).
constexpr int64_t kStartPrefetchBytes = 16 * 1024;

// Prefetches, a line at a time, up to `limit` weight bytes of row groups [g0, g1) of
// every plan, stopping early once `ready` is set.
void prefetch_groups(const MatmulPlan* plans, size_t n_plans, int64_t g0, int64_t g1, int64_t limit,
                     const std::atomic<bool>& ready) {
  for (size_t j = 0; j < n_plans && limit > 0; ++j) {
    const MatmulPlan& p = plans[j];
    const int64_t b = std::max(g0, p.first_group), e = std::min(g1, p.first_group + p.n_groups);
    if (b >= e) continue;
    const int64_t r0 = (b - p.first_group) * kRowGrain,
                  r1 = std::min(p.rows, (e - p.first_group) * kRowGrain);
    const int64_t bytes = std::min(limit, (r1 - r0) * p.w_row_bytes);
    const uint8_t* w = p.w + r0 * p.w_row_bytes;
    for (int64_t off = 0; off < bytes; off += 64) {
      if (off % 1024 == 0 && ready.load(std::memory_order_relaxed)) return;
      prefetch_l1(w + off);
    }
    limit -= bytes;
  }
}

constexpr size_t kMaxJobs = kMaxSharedInputJobs;

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
  const uintptr_t align = matmul_weight_alignment(wtype);
  if (reinterpret_cast<uintptr_t>(w) % align != 0) {
    throw Error("matmul: weights of type " + std::string(dtype_name(wtype)) +
                " must be aligned to " + std::to_string(align) + " bytes");
  }
}

}  // namespace

void matmul(DType wtype, const void* w, int64_t rows, int64_t cols, const float* x,
            int64_t n_tokens, float* y, ThreadPool& pool, std::vector<uint8_t>& scratch,
            const MatmulHooks& hooks) {
  const MatmulJob job{wtype, w, rows, y};
  matmul_shared_input({&job, 1}, cols, x, n_tokens, pool, scratch, hooks);
}

void matmul_shared_input(std::span<const MatmulJob> jobs, int64_t cols, const float* x,
                         int64_t n_tokens, ThreadPool& pool, std::vector<uint8_t>& scratch,
                         const MatmulHooks& hooks) {
  if (jobs.size() > kMaxJobs)
    throw Error("matmul: more than " + std::to_string(kMaxJobs) + " matrices share an input");
  MatmulPlan plans[kMaxJobs];
  // The distinct activation types: each job's index into them.
  DType act_types[kMaxJobs];
  size_t n_act = 0, act_of[kMaxJobs];
  int64_t n_groups = 0;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const MatmulJob& job = jobs[j];
    check_args(job.wtype, job.w, job.rows, cols, x, n_tokens, job.y);
    const TypeTraits& wt = type_traits(job.wtype);
    if (wt.vec_dot == nullptr || wt.gemm == nullptr) {
      throw Error("matmul: " + std::string(dtype_name(job.wtype)) + " is not a weight type");
    }
    MatmulPlan& plan = plans[j];
    plan = MatmulPlan{};
    plan.w = static_cast<const uint8_t*>(job.w);
    plan.w_row_bytes = row_bytes(job.wtype, cols, "matmul cols");
    plan.rows = job.rows;
    plan.cols = cols;
    plan.n_tokens = n_tokens;
    plan.y = job.y;
    plan.gemm = wt.gemm;
    plan.act_row_bytes = row_bytes(wt.vec_dot_type, cols, "matmul cols");
    plan.first_group = n_groups;
    plan.n_groups = n_tokens == 0 ? 0 : (job.rows + kRowGrain - 1) / kRowGrain;
    n_groups += plan.n_groups;
    act_of[j] = std::find(act_types, act_types + n_act, wt.vec_dot_type) - act_types;
    if (act_of[j] == n_act) act_types[n_act++] = wt.vec_dot_type;
  }
  if (n_groups == 0) {
    if (hooks.prepare != nullptr) hooks.prepare(hooks.prepare_ctx);
    if (hooks.prepare_rows != nullptr && n_tokens > 0)
      hooks.prepare_rows(hooks.prepare_rows_ctx, 0, n_tokens);
    return;
  }

  // Activation buffers, one per distinct vec_dot type (F32 uses x as it is).
  // Each buffer starts on a cache line, so the kernels' 64-byte activation loads do not
  // straddle two lines (the activation blocks are whole lines).
  size_t need = 0, offset[kMaxJobs];
  for (size_t i = 0; i < n_act; ++i) {
    offset[i] = need;
    if (act_types[i] != DType::F32)
      need += (static_cast<size_t>(row_bytes(act_types[i], cols) * n_tokens) + 63) & ~size_t{63};
  }
  if (scratch.size() < need + 64) scratch.resize(need + 64);
  const size_t base = (64 - reinterpret_cast<uintptr_t>(scratch.data()) % 64) % 64;
  for (size_t i = 0; i < n_act; ++i) offset[i] += base;
  // Rows [t0, t1): each prepared (hooks.prepare_rows) and then converted to every input
  // type while it is in L1.
  using FromFloat = void (*)(const float* src, void* dst, int64_t n);
  FromFloat from_float[kMaxJobs] = {};
  int64_t act_bytes[kMaxJobs] = {};
  for (size_t i = 0; i < n_act; ++i) {
    if (act_types[i] == DType::F32) continue;
    from_float[i] = type_traits(act_types[i]).from_float;
    act_bytes[i] = row_bytes(act_types[i], cols);
  }
  auto convert = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      if (hooks.prepare_rows != nullptr) hooks.prepare_rows(hooks.prepare_rows_ctx, t, t + 1);
      for (size_t i = 0; i < n_act; ++i) {
        if (from_float[i] != nullptr)
          from_float[i](x + t * cols, scratch.data() + offset[i] + t * act_bytes[i], cols);
      }
    }
  };
  for (size_t j = 0; j < jobs.size(); ++j) {
    const size_t i = act_of[j];
    plans[j].act = act_types[i] == DType::F32 ? reinterpret_cast<const uint8_t*>(x)
                                              : scratch.data() + offset[i];
  }
  const size_t n_plans = jobs.size();
  const int64_t claim = claim_groups(n_groups, pool.size(), n_tokens, plans[0].w_row_bytes);

  // One token on several threads: the input is prepared and converted inside the pool
  // job, on this thread, while the others wake up and prefetch the start of their
  // shares, instead of before the job while they wait (0.6-1.2 us a conversion at
  // llama-1b, plus the wake-up, in each of the 89 matmuls of a token).
  const bool overlap = n_tokens == 1 && pool.size() > 1;
  if (!overlap) {
    if (hooks.prepare != nullptr) hooks.prepare(hooks.prepare_ctx);
    if (n_tokens > 1 && pool.size() > 1) {
      pool.parallel_for(n_tokens, convert);
    } else {
      convert(0, n_tokens);
    }
  }
  std::atomic<bool> input_ready{!overlap};
  auto start = [&](int tid, int64_t g0, int64_t g1) {
    if (!overlap) return;
    if (tid == 0) {
      if (hooks.prepare != nullptr) hooks.prepare(hooks.prepare_ctx);
      convert(0, 1);
      pool.set_flag(input_ready);
      return;
    }
    prefetch_groups(plans, n_plans, g0, g1, kStartPrefetchBytes, input_ready);
    pool.wait_until_set(input_ready);
  };
  pool.parallel_for_stealing(n_groups, claim, start, [&](int64_t g0, int64_t g1) {
    for (size_t j = 0; j < n_plans; ++j) {
      const MatmulPlan& p = plans[j];
      const int64_t b = std::max(g0, p.first_group), e = std::min(g1, p.first_group + p.n_groups);
      if (b < e)
        compute_rows(p, (b - p.first_group) * kRowGrain,
                     std::min(p.rows, (e - p.first_group) * kRowGrain));
    }
  });
}

}  // namespace strata::kernels
