// matmul: realistic shapes against a double-precision reference, batch and thread
// invariance, scratch reuse and argument checking.
#include "kernels/cpu/matmul.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kernel_test_util.h"
#include "kernels/quant/interleaved.h"
#include "kernels/quant/traits.h"

namespace strata::kernels {
namespace {

using test::Rng;

// y = W x with W rows x cols of type t (random valid bytes) and n_tokens random rows x, checked
// element-wise against sum(dequantized W * converted-then-dequantized x) in double, with
// the dot-product tolerance of vec_dot_test.cpp.
void check_against_double(DType t, int64_t rows, int64_t cols, int64_t n_tokens, ThreadPool& pool) {
  Rng rng(static_cast<uint64_t>(rows * 31 + cols) + static_cast<uint64_t>(t));
  const std::vector<uint8_t> w = test::random_weights(t, rows, cols, rng);
  const std::vector<float> x = test::normal_floats(rng, n_tokens * cols);
  std::vector<float> y(static_cast<size_t>(n_tokens * rows));
  std::vector<uint8_t> scratch;
  matmul(t, w.data(), rows, cols, x.data(), n_tokens, y.data(), pool, scratch);

  // Activations as the kernel sees them (the quantizers are identical in both tables).
  const DType at = type_traits(t).vec_dot_type;
  const int64_t act_bytes = test::bytes_for(at, cols);
  std::vector<uint8_t> act(static_cast<size_t>(act_bytes * n_tokens));
  std::vector<float> af(x.size());
  for (int64_t tok = 0; tok < n_tokens; ++tok) {
    reference_type_traits(at).from_float(x.data() + tok * cols, act.data() + tok * act_bytes, cols);
    reference_type_traits(at).to_float(act.data() + tok * act_bytes, af.data() + tok * cols, cols);
  }
  const int64_t w_bytes = test::bytes_for(t, cols);
  std::vector<float> wf(static_cast<size_t>(cols));
  int64_t checked = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* wr = w.data() + r * w_bytes;
    reference_type_traits(t).to_float(wr, wf.data(), cols);
    const std::vector<double> mags = test::weight_magnitudes(t, wr, wf.data(), cols);
    for (int64_t tok = 0; tok < n_tokens; ++tok) {
      const float* a = af.data() + tok * cols;
      double exact = 0, mag = 0;
      for (int64_t i = 0; i < cols; ++i) {
        exact += static_cast<double>(wf[i]) * a[i];
        mag += mags[i] * std::fabs(a[i]);
      }
      ASSERT_NEAR(y[tok * rows + r], exact, test::dot_tolerance(cols, mag))
          << dtype_name(t) << " " << rows << "x" << cols << " row " << r << " token " << tok;
      ++checked;
    }
  }
  EXPECT_EQ(checked, rows * n_tokens);
}

TEST(Matmul, RealisticShapesMatchDoubleReference) {
  ThreadPool pool(2);
  for (DType t : test::weight_types()) {
    check_against_double(t, 2048, 5632, 3, pool);
    check_against_double(t, 5632, 2048, 2, pool);
  }
}

TEST(Matmul, OddShapes) {
  ThreadPool pool(3);
  check_against_double(DType::F32, 37, 1001, 5, pool);  // SIMD tails
  check_against_double(DType::F16, 3, 9, 2, pool);      // fewer rows than threads... almost
  check_against_double(DType::Q4_0, 1, 96, 1, pool);    // odd number of blocks
  check_against_double(DType::Q8_0, 2, 32, 9, pool);    // fewer rows than threads
}

// One token alone, the same token at position 3 of a batch of 7, with 1, 2 and 3 threads:
// the outputs for that token must be bit-identical.
TEST(Matmul, BatchAndThreadInvariance) {
  const int64_t rows = 1001, cols = 2048, n_tokens = 7, pick = 3;
  ThreadPool one(1), two(2), three(3);
  for (DType t : test::weight_types()) {
    Rng rng(40 + static_cast<uint64_t>(t));
    const std::vector<uint8_t> w = test::random_weights(t, rows, cols, rng);
    const std::vector<float> x = test::normal_floats(rng, n_tokens * cols);
    std::vector<uint8_t> scratch;
    std::vector<float> single(static_cast<size_t>(rows));
    matmul(t, w.data(), rows, cols, x.data() + pick * cols, 1, single.data(), one, scratch);
    for (ThreadPool* pool : {&one, &two, &three}) {
      std::vector<float> batch(static_cast<size_t>(n_tokens * rows));
      matmul(t, w.data(), rows, cols, x.data(), n_tokens, batch.data(), *pool, scratch);
      EXPECT_EQ(std::memcmp(batch.data() + pick * rows, single.data(), rows * sizeof(float)), 0)
          << dtype_name(t) << " with " << pool->size() << " threads";
    }
  }
}

// Several matrices sharing one input (one conversion per activation type, one dispatch) give
// what separate matmul calls give, bit for bit, whatever the mix of types and thread count.
TEST(Matmul, SharedInputMatchesSeparateCalls) {
  const int64_t cols = 1024;
  Rng rng(77);
  struct Matrix {
    DType type;
    int64_t rows;
    std::vector<uint8_t> w;
  };
  std::vector<Matrix> ms = {
      {DType::Q4_0, 37, {}}, {DType::Q8_0, 6, {}}, {DType::F16, 9, {}}, {DType::Q4_0, 16, {}}};
  for (auto& m : ms) m.w = test::random_weights(m.type, m.rows, cols, rng);
  // The Q8_0 one and the last Q4_0 one in the layouts a model repacks them into on
  // AVX-512 machines (their activation type differs from the file types').
  for (Matrix* m : {&ms[1], &ms[3]}) {
    const DType x16 = repacked_weight_type(m->type, cols);
    if (x16 != m->type) repack_weight_rows(m->type, x16, m->w.data(), m->rows, cols);
    m->type = x16;
  }
  ThreadPool one(1), two(2), three(3);
  for (const int64_t n_tokens : {1, 5}) {
    const std::vector<float> x = test::normal_floats(rng, n_tokens * cols);
    for (ThreadPool* pool : {&one, &two, &three}) {
      std::vector<uint8_t> scratch;
      std::vector<std::vector<float>> separate, shared;
      std::vector<MatmulJob> jobs;
      for (auto& m : ms) {
        separate.emplace_back(static_cast<size_t>(m.rows * n_tokens));
        shared.emplace_back(static_cast<size_t>(m.rows * n_tokens), -1.0f);
        matmul(m.type, m.w.data(), m.rows, cols, x.data(), n_tokens, separate.back().data(), *pool,
               scratch);
      }
      for (size_t i = 0; i < ms.size(); ++i)
        jobs.push_back({ms[i].type, ms[i].w.data(), ms[i].rows, shared[i].data()});
      matmul_shared_input(jobs, cols, x.data(), n_tokens, *pool, scratch);
      for (size_t i = 0; i < ms.size(); ++i) {
        EXPECT_EQ(separate[i], shared[i])
            << "matrix " << i << ", " << n_tokens << " tokens, " << pool->size() << " threads";
      }
    }
  }
}

// The hook tests' matrices: Q4_0 and Q8_0 (repacked as a model holds them) and F16, 45
// rows of `cols` each.
using HookMatrices = std::vector<std::pair<DType, std::vector<uint8_t>>>;
HookMatrices hook_test_matrices(int64_t cols, Rng& rng) {
  HookMatrices ms;
  for (DType t : {DType::Q4_0, DType::Q8_0, DType::F16}) {
    std::vector<uint8_t> w = test::random_weights(t, 45, cols, rng);
    const DType x16 = repacked_weight_type(t, cols);
    if (x16 != t) repack_weight_rows(t, x16, w.data(), 45, cols);
    ms.emplace_back(x16, std::move(w));
  }
  return ms;
}

// Each matrix's first `rows` rows times `source` by plain matmul (expected), and the jobs
// of one matmul_shared_input call writing the same products into `got` (-1 until written).
struct HookCase {
  std::vector<std::vector<float>> expected, got;
  std::vector<MatmulJob> jobs;
};
HookCase hook_case(const HookMatrices& ms, int64_t rows, int64_t cols,
                   const std::vector<float>& source, int64_t n_tokens, ThreadPool& pool) {
  HookCase c;
  std::vector<uint8_t> scratch;
  for (const auto& [t, w] : ms) {
    c.expected.emplace_back(static_cast<size_t>(rows * n_tokens));
    c.got.emplace_back(static_cast<size_t>(rows * n_tokens), -1.0f);
    matmul(t, w.data(), rows, cols, source.data(), n_tokens, c.expected.back().data(), pool,
           scratch);
  }
  for (size_t i = 0; i < ms.size(); ++i)
    c.jobs.push_back({ms[i].first, ms[i].second.data(), rows, c.got[i].data()});
  return c;
}

// The prepare hook runs exactly once, before the input is read, on the calling thread or
// inside the pool job (one token on several threads), and the outputs are those of
// preparing the input first.
TEST(Matmul, PrepareHookRunsOnceBeforeTheInputIsRead) {
  const int64_t cols = 1024;
  Rng rng(91);
  const HookMatrices ms = hook_test_matrices(cols, rng);
  ThreadPool one(1), two(2), three(3);
  for (const int64_t n_tokens : {1, 3}) {
    const std::vector<float> source = test::normal_floats(rng, n_tokens * cols);
    for (ThreadPool* pool : {&one, &two, &three}) {
      HookCase c = hook_case(ms, 45, cols, source, n_tokens, *pool);
      std::vector<float> x(source.size(), std::nanf(""));  // written only by prepare
      int calls = 0;
      auto prepare = [&] {
        ++calls;
        x = source;
      };
      MatmulHooks hooks;
      set_prepare(hooks, prepare);
      std::vector<uint8_t> fresh_scratch;  // holds nothing of the calls above
      matmul_shared_input(c.jobs, cols, x.data(), n_tokens, *pool, fresh_scratch, hooks);
      EXPECT_EQ(calls, 1);
      for (size_t i = 0; i < ms.size(); ++i) {
        EXPECT_EQ(c.expected[i], c.got[i])
            << "matrix " << i << ", " << n_tokens << " tokens, " << pool->size() << " threads";
      }
    }
  }
}

// The prepare_rows hook prepares every row exactly once, after prepare and before the row
// is read (converted, or read as floats by an F16 matrix), on any thread; the outputs are
// those of preparing the input first. With no rows to compute it still prepares them all.
TEST(Matmul, PrepareRowsHookPreparesEveryRowOnceBeforeItIsRead) {
  const int64_t cols = 1024;
  Rng rng(92);
  const HookMatrices ms = hook_test_matrices(cols, rng);
  ThreadPool one(1), two(2), three(3);
  for (const int64_t n_tokens : {1, 3, 17}) {
    const std::vector<float> source = test::normal_floats(rng, n_tokens * cols);
    for (ThreadPool* pool : {&one, &two, &three}) {
      for (const int64_t rows : {int64_t{45}, int64_t{0}}) {
        HookCase c = hook_case(ms, rows, cols, source, n_tokens, *pool);
        std::vector<float> x(source.size(), std::nanf(""));  // written only by prepare_rows
        std::vector<std::atomic<int>> calls(static_cast<size_t>(n_tokens));
        std::atomic<bool> prepared{false}, early{false};
        auto prepare = [&] { prepared = true; };
        auto prepare_rows = [&](int64_t t0, int64_t t1) {
          if (!prepared) early = true;
          for (int64_t t = t0; t < t1; ++t) {
            ++calls[static_cast<size_t>(t)];
            std::copy_n(source.begin() + t * cols, cols, x.begin() + t * cols);
          }
        };
        MatmulHooks hooks;
        set_prepare(hooks, prepare);
        set_prepare_rows(hooks, prepare_rows);
        std::vector<uint8_t> fresh_scratch;
        matmul_shared_input(c.jobs, cols, x.data(), n_tokens, *pool, fresh_scratch, hooks);
        const std::string where = std::to_string(n_tokens) + " tokens, " + std::to_string(rows) +
                                  " rows, " + std::to_string(pool->size()) + " threads";
        EXPECT_FALSE(early) << where;
        for (const auto& n : calls) EXPECT_EQ(n, 1) << where;
        for (size_t i = 0; i < ms.size(); ++i)
          EXPECT_EQ(c.expected[i], c.got[i]) << "matrix " << i << ", " << where;
      }
    }
  }
}

// Every output of the tiled gemm path must be bit-identical to the type's vec_dot on the
// same converted activation row, for batch sizes that hit every tile shape and edge, row
// counts that are not multiples of the tile height, and 1-3 threads.
TEST(Matmul, GemmMatchesVecDotBitForBit) {
  const int64_t rows = 67, cols = 512;
  ThreadPool one(1), two(2), three(3);
  for (DType t : test::weight_types()) {
    Rng rng(60 + static_cast<uint64_t>(t));
    const std::vector<uint8_t> w = test::random_weights(t, rows, cols, rng);
    const std::vector<float> x = test::normal_floats(rng, 33 * cols);
    const TypeTraits& tt = type_traits(t);
    const DType at = tt.vec_dot_type;
    const int64_t act_bytes = test::bytes_for(at, cols), w_bytes = test::bytes_for(t, cols);
    std::vector<uint8_t> act(static_cast<size_t>(act_bytes * 33));
    for (int64_t tok = 0; tok < 33; ++tok) {
      type_traits(at).from_float(x.data() + tok * cols, act.data() + tok * act_bytes, cols);
    }
    std::vector<float> expected(static_cast<size_t>(33 * rows));
    for (int64_t tok = 0; tok < 33; ++tok) {
      for (int64_t r = 0; r < rows; ++r) {
        expected[tok * rows + r] =
            tt.vec_dot(cols, w.data() + r * w_bytes, act.data() + tok * act_bytes);
      }
    }
    std::vector<uint8_t> scratch;
    for (int64_t n : {1, 2, 3, 4, 5, 7, 8, 16, 33}) {
      for (ThreadPool* pool : {&one, &two, &three}) {
        std::vector<float> y(static_cast<size_t>(n * rows));
        matmul(t, w.data(), rows, cols, x.data(), n, y.data(), *pool, scratch);
        EXPECT_EQ(std::memcmp(y.data(), expected.data(), y.size() * sizeof(float)), 0)
            << dtype_name(t) << " n_tokens=" << n << " threads=" << pool->size();
      }
      // The kernel itself on a sub-range of rows and a strided output.
      std::vector<float> y(static_cast<size_t>(n * rows), -1.0f);
      tt.gemm(cols, w.data() + 5 * w_bytes, w_bytes, rows - 5, act.data(), act_bytes, n,
              y.data() + 5, rows);
      for (int64_t tok = 0; tok < n; ++tok) {
        EXPECT_EQ(std::memcmp(y.data() + tok * rows + 5, expected.data() + tok * rows + 5,
                              (rows - 5) * sizeof(float)),
                  0)
            << dtype_name(t) << " gemm n_tokens=" << n << " token " << tok;
        EXPECT_EQ(y[tok * rows], -1.0f);
      }
    }
  }
}

TEST(Matmul, ReusesScratchOnceBigEnough) {
  ThreadPool pool(2);
  Rng rng(50);
  const int64_t rows = 64, cols = 512;
  const std::vector<uint8_t> w = test::random_weights(DType::Q4_K, rows, cols, rng);
  const std::vector<float> x = test::normal_floats(rng, 8 * cols);
  std::vector<float> y(static_cast<size_t>(8 * rows));
  std::vector<uint8_t> scratch;
  matmul(DType::Q4_K, w.data(), rows, cols, x.data(), 8, y.data(), pool, scratch);
  // The activations, rounded up to whole cache lines, plus one line to align their start.
  const size_t act_bytes = static_cast<size_t>(8 * test::bytes_for(DType::Q8_K, cols));
  EXPECT_EQ(scratch.size(), ((act_bytes + 63) & ~size_t{63}) + 64);
  const uint8_t* before = scratch.data();
  for (int64_t n : {1, 5, 8}) {
    matmul(DType::Q4_K, w.data(), rows, cols, x.data(), n, y.data(), pool, scratch);
    EXPECT_EQ(scratch.data(), before) << n;
  }
}

TEST(Matmul, RejectsBadArguments) {
  ThreadPool pool(1);
  std::vector<uint8_t> scratch;
  std::vector<uint8_t> w(4096);
  std::vector<float> x(512), y(64);
  EXPECT_THROW(matmul(DType::Q4_0, w.data(), 2, 100, x.data(), 1, y.data(), pool, scratch), Error);
  EXPECT_THROW(matmul(DType::Q4_K, w.data(), 2, 128, x.data(), 1, y.data(), pool, scratch), Error);
  EXPECT_THROW(matmul(DType::Q8_K, w.data(), 2, 256, x.data(), 1, y.data(), pool, scratch), Error);
  EXPECT_THROW(matmul(DType::Q8_1, w.data(), 2, 256, x.data(), 1, y.data(), pool, scratch), Error);
  EXPECT_THROW(matmul(DType::F32, w.data(), -1, 4, x.data(), 1, y.data(), pool, scratch), Error);
  EXPECT_THROW(matmul(DType::F32, w.data() + 1, 2, 4, x.data(), 1, y.data(), pool, scratch), Error);
  EXPECT_THROW(matmul(DType::F32, nullptr, 2, 4, x.data(), 1, y.data(), pool, scratch), Error);
  // Empty products are fine and write nothing.
  y[0] = 42.0f;
  matmul(DType::Q8_0, w.data(), 0, 64, x.data(), 1, y.data(), pool, scratch);
  matmul(DType::Q8_0, w.data(), 2, 64, x.data(), 0, y.data(), pool, scratch);
  EXPECT_EQ(y[0], 42.0f);
}

}  // namespace
}  // namespace strata::kernels
