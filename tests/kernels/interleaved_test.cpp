// The internal interleaved layouts (Q4_0_X16 and Q8_0_X16 weights, Q8_0_X16A
// activations; Q6_K_X16, Q4_K_X16, Q5_K_X16, IQ4_XS_X16, Q3_K_X16 and Q2_K_X16 weights, Q8_K_X16A
// activations):
// repacking is a
// lossless byte move, the activation layout is the same whichever level converts it, the scalar
// models agree with the file layouts' kernels up to float rounding, and the AVX2 and AVX-512
// kernels agree with the scalar models bit for bit for every tile shape.
#include "kernels/quant/interleaved.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernel_test_util.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/kernels_ref.h"
#include "kernels/quant/traits.h"

namespace strata::kernels {
namespace {

using test::Rng;

bool same_float(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0;
}

// The file types and the layouts they are repacked into, each with its activation type.
struct Pair {
  DType file, x16, file_act, x16_act;
};
const Pair kPairs[] = {{DType::Q4_0, DType::Q4_0_X16, DType::Q8_0, DType::Q8_0_X16A},
                       {DType::Q8_0, DType::Q8_0_X16, DType::Q8_0, DType::Q8_0_X16A},
                       {DType::Q6_K, DType::Q6_K_X16, DType::Q8_K, DType::Q8_K_X16A},
                       {DType::Q4_K, DType::Q4_K_X16, DType::Q8_K, DType::Q8_K_X16A},
                       {DType::Q5_K, DType::Q5_K_X16, DType::Q8_K, DType::Q8_K_X16A},
                       {DType::IQ4_XS, DType::IQ4_XS_X16, DType::Q8_K, DType::Q8_K_X16A},
                       {DType::Q3_K, DType::Q3_K_X16, DType::Q8_K, DType::Q8_K_X16A},
                       {DType::Q3_K, DType::Q3_K_X16S, DType::Q8_K, DType::Q8_K_X16A},
                       {DType::Q4_1, DType::Q4_1_X16, DType::Q8_0, DType::Q8_0_X16A},
                       {DType::Q5_0, DType::Q5_0_X16, DType::Q8_0, DType::Q8_0_X16A},
                       {DType::Q5_1, DType::Q5_1_X16, DType::Q8_0, DType::Q8_0_X16A},
                       {DType::IQ4_NL, DType::IQ4_NL_X16, DType::Q8_0, DType::Q8_0_X16A},
                       {DType::Q2_K, DType::Q2_K_X16, DType::Q8_K, DType::Q8_K_X16A},
                       {DType::Q4_K, DType::Q4_K_X16P, DType::Q8_K, DType::Q8_0_X16A},
                       {DType::Q5_K, DType::Q5_K_X16P, DType::Q8_K, DType::Q8_0_X16A},
                       {DType::IQ4_XS, DType::IQ4_XS_X16P, DType::Q8_K, DType::Q8_0_X16A}};

// The K pairs (files whose rows are whole 512-element groups repack to them).
bool k_pair(DType x16) {
  return x16 == DType::Q4_K_X16P || x16 == DType::Q5_K_X16P || x16 == DType::IQ4_XS_X16P;
}

// The fp16 super-block scales of a repacked row: leading each X16 group (16 of them, one
// per block), or the last field of each Q6_K_X16 block.
uint16_t* row_scale(const Pair& p, uint8_t* row, int i) {
  if (p.x16 == DType::Q6_K_X16) return &reinterpret_cast<BlockQ6_Kx16*>(row)[i].d;
  // Q4_K_X16: the sub-block scale multiplier d of block 0 and the min multiplier of block 1.
  if (p.x16 == DType::Q4_K_X16) {
    auto* blocks = reinterpret_cast<BlockQ4_Kx16*>(row);
    return i == 0 ? &blocks[0].d : &blocks[1].dmin;
  }
  if (p.x16 == DType::Q5_K_X16) {
    auto* blocks = reinterpret_cast<BlockQ5_Kx16*>(row);
    return i == 0 ? &blocks[0].d : &blocks[1].dmin;
  }
  // IQ4_XS_X16: the scale of blocks 0 and 1.
  if (p.x16 == DType::IQ4_XS_X16) return &reinterpret_cast<BlockIQ4_XSx16*>(row)[i].d;
  if (p.x16 == DType::Q3_K_X16) return &reinterpret_cast<BlockQ3_Kx16*>(row)[i].d;
  if (p.x16 == DType::Q3_K_X16S) return &reinterpret_cast<BlockQ3_Kx16S*>(row)[i].d;
  if (p.x16 == DType::Q2_K_X16) {
    auto* blocks = reinterpret_cast<BlockQ2_Kx16*>(row);
    return i == 0 ? &blocks[0].d : &blocks[1].dmin;
  }
  // Q4_K_X16P, Q5_K_X16P: super-block 0's d and super-block 1's dmin.
  if (p.x16 == DType::Q4_K_X16P || p.x16 == DType::Q5_K_X16P) {
    auto* head = reinterpret_cast<KPairHead*>(row);
    return i == 0 ? &head->d[0] : &head->dmin[1];
  }
  // IQ4_XS_X16P: the scales of super-blocks 0 and 1.
  if (p.x16 == DType::IQ4_XS_X16P) return &reinterpret_cast<IQ4XSPairHead*>(row)->d[i];
  // Q4_1_X16, Q5_1_X16: block 0's scale and block 1's offset.
  if (p.x16 == DType::Q4_1_X16) {
    auto& g = *reinterpret_cast<BlockQ4_1x16*>(row);
    return i == 0 ? &g.d[0] : &g.m[1];
  }
  if (p.x16 == DType::Q5_1_X16) {
    auto& g = *reinterpret_cast<BlockQ5_1x16*>(row);
    return i == 0 ? &g.d[0] : &g.m[1];
  }
  if (p.x16 == DType::Q8_0_X16) return q8_0_x16_d(*reinterpret_cast<BlockQ8_0x16*>(row)) + i;
  return reinterpret_cast<uint16_t*>(row) + i;
}

std::vector<uint8_t> repacked(const Pair& p, const std::vector<uint8_t>& w, int64_t rows,
                              int64_t cols) {
  std::vector<uint8_t> out = w;
  repack_weight_rows(p.file, p.x16, out.data(), rows, cols);
  return out;
}

std::vector<uint8_t> activations(DType t, const std::vector<float>& x, int64_t n_tokens,
                                 int64_t cols, const TypeTraits& traits) {
  const int64_t bytes = row_bytes(t, cols);
  std::vector<uint8_t> a(static_cast<size_t>(bytes * n_tokens));
  for (int64_t i = 0; i < n_tokens; ++i)
    traits.from_float(x.data() + i * cols, a.data() + i * bytes, cols);
  return a;
}

// Q8_0_X16A activation rows (ab bytes apart) as Q8_0_X16AT rows: the same groups, then
// their quants in block order (blocks.h), written here from the definition.
std::vector<uint8_t> with_tile_rows(const uint8_t* a, int64_t ab, int64_t n_tokens, int64_t cols) {
  const int64_t ng = cols / kQKX16, groups_bytes = ng * static_cast<int64_t>(sizeof(BlockQ8_0x16A));
  const int64_t out_bytes = row_bytes(DType::Q8_0_X16AT, cols);
  std::vector<uint8_t> out(static_cast<size_t>(out_bytes * n_tokens));
  for (int64_t t = 0; t < n_tokens; ++t) {
    uint8_t* row = out.data() + t * out_bytes;
    std::memcpy(row, a + t * ab, static_cast<size_t>(groups_bytes));
    const auto* groups = reinterpret_cast<const BlockQ8_0x16A*>(a + t * ab);
    for (int64_t g = 0; g < ng; ++g) {
      for (int b = 0; b < kX16Blocks; ++b) {
        for (int e = 0; e < 32; ++e) {  // element e of block b: byte 64 (e / 4) + 4b + e % 4
          row[groups_bytes + (g * kX16Blocks + b) * 32 + e] =
              static_cast<uint8_t>(groups[g].qs[64 * (e / 4) + 4 * b + e % 4]);
        }
      }
    }
  }
  return out;
}

// A kernel table under test: a level's, or the avx2 level's with its AVX-VNNI kernels.
struct Kernels {
  KernelIsa isa;
  bool avx_vnni = false;
  std::optional<AmxTiles> amx;  // the avx512_vnni table with AMX GEMMs
  Kernels(KernelIsa i, bool vnni = false) : isa(i), avx_vnni(vnni) {}  // NOLINT: implicit
  explicit Kernels(AmxTiles tiles) : isa(KernelIsa::avx512_vnni), amx(tiles) {}
  const TypeTraits& traits(DType t) const {
    if (amx) return type_traits_amx(t, *amx);
    return avx_vnni ? type_traits_avx_vnni(t) : type_traits_for(isa, t);
  }
  std::string name() const {
    if (amx) return *amx == AmxTiles::hardware ? "amx" : "amx-emulated";
    return std::string(kernel_isa_name(isa)) + (avx_vnni ? "+vnni" : "");
  }
};

// The tables this CPU runs at the avx2 level and above: avx2, avx2 with AVX-VNNI, avx512,
// avx512 with AMX's scalar model, avx512 with AMX.
std::vector<Kernels> kernel_tables() {
  std::vector<Kernels> out;
  if (cpu_kernel_isa() >= KernelIsa::avx2) out.emplace_back(KernelIsa::avx2);
  if (cpu_has_avx_vnni()) out.emplace_back(KernelIsa::avx2, true);
  if (cpu_kernel_isa() >= KernelIsa::avx512_vnni) {
    out.emplace_back(KernelIsa::avx512_vnni);
    out.emplace_back(AmxTiles::emulated);
  }
  if (cpu_has_amx_int8()) out.emplace_back(AmxTiles::hardware);
  return out;
}

// A level's gemm of `rows` weight rows (wb bytes apart) by n_tokens activation rows (ab
// bytes apart), and each row's vec_dot, against the scalar model, output by output;
// `where` names the case in failure messages.
void expect_outputs_match_scalar_model(const Kernels& k, DType type, const uint8_t* w, int64_t wb,
                                       int64_t rows, int64_t cols, const uint8_t* a, int64_t ab,
                                       int64_t n_tokens, const std::string& where) {
  const TypeTraits& ref = reference_type_traits(type);
  const TypeTraits& fast = k.traits(type);
  // The AMX tables take the Q8_0_X16A rows again as Q8_0_X16AT.
  std::vector<uint8_t> tiled;
  const uint8_t* fa = a;
  int64_t fab = ab;
  if (fast.vec_dot_type == DType::Q8_0_X16AT && ref.vec_dot_type == DType::Q8_0_X16A) {
    tiled = with_tile_rows(a, ab, n_tokens, cols);
    fa = tiled.data();
    fab = row_bytes(DType::Q8_0_X16AT, cols);
  }
  std::vector<float> y(static_cast<size_t>(rows * n_tokens));
  fast.gemm(cols, w, wb, rows, fa, fab, n_tokens, y.data(), rows);
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t r = 0; r < rows; ++r) {
      const float want = ref.vec_dot(cols, w + r * wb, a + t * ab);
      EXPECT_TRUE(same_float(y[static_cast<size_t>(t * rows + r)], want))
          << k.name() << " " << dtype_name(type) << " " << where << " at (" << r << ", " << t
          << "): " << y[static_cast<size_t>(t * rows + r)] << " vs " << want;
      EXPECT_TRUE(same_float(fast.vec_dot(cols, w + r * wb, fa + t * fab), want))
          << k.name() << " " << dtype_name(type) << " " << where << " vec_dot at (" << r << ", "
          << t << ")";
    }
  }
}

TEST(Interleaved, LayoutsHaveTheSizeOfWhatTheyReplace) {
  EXPECT_EQ(row_bytes(DType::Q4_0_X16, 2048), row_bytes(DType::Q4_0, 2048));
  EXPECT_EQ(row_bytes(DType::Q8_0_X16, 2048), row_bytes(DType::Q8_0, 2048));
  EXPECT_EQ(dtype_info(DType::Q4_0_X16).block_size, kQKX16);
  EXPECT_EQ(dtype_info(DType::Q8_0_X16A).type_size, sizeof(BlockQ8_0x16A));
  EXPECT_EQ(row_bytes(DType::Q6_K_X16, 2048), row_bytes(DType::Q6_K, 2048));
  EXPECT_EQ(dtype_info(DType::Q8_K_X16A).type_size, sizeof(BlockQ8_Kx16A));
  // Internal ids are not file types: a GGUF naming them is rejected by the reader.
  for (DType t :
       {DType::Q4_0_X16, DType::Q8_0_X16, DType::Q8_0_X16A, DType::Q6_K_X16, DType::Q8_K_X16A,
        DType::Q4_K_X16, DType::Q5_K_X16, DType::IQ4_XS_X16, DType::Q3_K_X16, DType::Q4_1_X16,
        DType::Q5_0_X16, DType::Q5_1_X16, DType::IQ4_NL_X16, DType::Q2_K_X16, DType::Q4_K_X16P,
        DType::Q5_K_X16P, DType::IQ4_XS_X16P, DType::Q3_K_X16S}) {
    EXPECT_FALSE(dtype_info(static_cast<uint32_t>(t)).has_value());
    EXPECT_FALSE(dtype_from_name(dtype_name(t)).has_value());
  }
}

TEST(Interleaved, RepackIsLossless) {
  Rng rng(1);
  const int64_t rows = 3, cols = 1536;
  for (const Pair& p : kPairs) {
    const auto w = test::random_weights(p.file, rows, cols, rng);
    const auto x16 = repacked(p, w, rows, cols);
    EXPECT_NE(w, x16);
    std::vector<float> a(static_cast<size_t>(rows * cols)), b(a.size());
    reference_type_traits(p.file).to_float(w.data(), a.data(), rows * cols);
    reference_type_traits(p.x16).to_float(x16.data(), b.data(), rows * cols);
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float))) << dtype_name(p.x16);

    // from_float of the repacked type = the file type's quantizer, then repacking.
    const auto f = test::normal_floats(rng, cols);
    std::vector<uint8_t> q(static_cast<size_t>(row_bytes(p.file, cols))), qx(q.size());
    reference_type_traits(p.file).from_float(f.data(), q.data(), cols);
    reference_type_traits(p.x16).from_float(f.data(), qx.data(), cols);
    if (p.x16 == DType::Q8_0_X16) {
      // Its bytes depend on the address (blocks.h), and these vectors may lie differently.
      std::vector<float> from_q(static_cast<size_t>(cols)), from_qx(from_q.size());
      reference_type_traits(p.x16).to_float(repacked(p, q, 1, cols).data(), from_q.data(), cols);
      reference_type_traits(p.x16).to_float(qx.data(), from_qx.data(), cols);
      EXPECT_EQ(from_q, from_qx);
    } else {
      EXPECT_EQ(repacked(p, q, 1, cols), qx) << dtype_name(p.x16);
    }
  }
}

// A tensor large enough to be repacked by several threads (ranges of 2 MiB) gives the
// bytes of the same rows repacked one by one (each on one thread).
TEST(Interleaved, LargeRepackOverThreadsMatchesRowByRow) {
  const int64_t cols = 4096, rows = 1500;  // Q6_K: 4.8 MiB; Q4_0: 3.3 MiB
  for (const Pair& p : {kPairs[0], kPairs[2]}) {
    const int64_t bytes = row_bytes(p.file, cols);
    std::vector<uint8_t> whole(static_cast<size_t>(bytes * rows));
    Rng rng(5);
    for (auto& b : whole) b = static_cast<uint8_t>(rng.next());
    std::vector<uint8_t> by_row = whole;
    repack_weight_rows(p.file, p.x16, whole.data(), rows, cols);
    for (int64_t r = 0; r < rows; ++r)
      repack_weight_rows(p.file, p.x16, by_row.data() + r * bytes, 1, cols);
    EXPECT_TRUE(whole == by_row) << dtype_name(p.x16);
  }
}

// Q8_0_X16 at every 16-byte offset from a cache line: repacking stays lossless, the quants
// of every group start on a line when the rows are 32-byte aligned (the layout's point),
// and each level's kernels agree with the scalar model wherever the groups lie.
TEST(Interleaved, Q8_0GroupsPutTheirQuantsOnCacheLines) {
  Rng rng(11);
  const Pair& p = kPairs[1];
  ASSERT_EQ(p.x16, DType::Q8_0_X16);
  const int64_t rows = 3, cols = 1536, wb = row_bytes(p.x16, cols);  // 3 groups a row
  const auto file = test::random_weights(p.file, rows, cols, rng);
  std::vector<float> want(static_cast<size_t>(rows * cols)), got(want.size());
  reference_type_traits(p.file).to_float(file.data(), want.data(), rows * cols);
  const auto x = test::normal_floats(rng, 5 * cols, 3.0f);
  const auto a = activations(p.x16_act, x, 5, cols, reference_type_traits(p.x16_act));
  const int64_t ab = row_bytes(p.x16_act, cols);
  std::vector<uint8_t> storage(file.size() + 128);
  for (const uintptr_t offset : {0, 16, 32, 48}) {
    const uintptr_t base = reinterpret_cast<uintptr_t>(storage.data());
    uint8_t* w = storage.data() + (64 - base % 64) % 64 + offset;
    std::memcpy(w, file.data(), file.size());
    repack_weight_rows(p.file, p.x16, w, rows, cols);
    reference_type_traits(p.x16).to_float(w, got.data(), rows * cols);
    EXPECT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float))) << offset;
    for (int64_t g = 0; g < rows * cols / kQKX16; ++g) {
      const auto& group = reinterpret_cast<const BlockQ8_0x16*>(w)[g];
      if (offset % 32 == 0) {
        EXPECT_EQ(reinterpret_cast<uintptr_t>(q8_0_x16_qs(group)) % 64, 0u) << offset << " " << g;
      }
    }
    for (const Kernels& k : kernel_tables()) {
      expect_outputs_match_scalar_model(k, p.x16, w, wb, rows, cols, a.data(), ab, 5,
                                        "offset " + std::to_string(offset));
    }
  }
}

TEST(Interleaved, RepackRejectsOtherShapesAndTypes) {
  std::vector<uint8_t> buf(4096);
  EXPECT_THROW(repack_weight_rows(DType::Q4_0, DType::Q4_0_X16, buf.data(), 1, 480), Error);
  EXPECT_THROW(repack_weight_rows(DType::Q8_0, DType::Q4_0_X16, buf.data(), 1, 512), Error);
  EXPECT_THROW(repack_weight_rows(DType::Q4_0, DType::Q8_0_X16, buf.data(), 1, 512), Error);
  EXPECT_THROW(repack_weight_rows(DType::Q4_K, DType::Q4_0_X16, buf.data(), 1, 512), Error);
  EXPECT_EQ(repacked_weight_type(DType::Q4_0, 480), DType::Q4_0);
  const bool avx2 = cpu_kernel_isa() >= KernelIsa::avx2;
  EXPECT_EQ(repacked_weight_type(DType::Q4_0, 2048), avx2 ? DType::Q4_0_X16 : DType::Q4_0);
  EXPECT_EQ(repacked_weight_type(DType::Q8_0, 2048), avx2 ? DType::Q8_0_X16 : DType::Q8_0);
  EXPECT_THROW(repack_weight_rows(DType::Q6_K, DType::Q6_K_X16, buf.data(), 1, 200), Error);
  EXPECT_THROW(repack_weight_rows(DType::Q6_K, DType::Q4_0_X16, buf.data(), 1, 512), Error);
  EXPECT_EQ(repacked_weight_type(DType::Q6_K, 2048), avx2 ? DType::Q6_K_X16 : DType::Q6_K);
  const DType q4_k_by_super_block = avx2 ? DType::Q4_K_X16 : DType::Q4_K;
  EXPECT_EQ(repacked_weight_type(DType::Q4_K, 2048), avx2 ? DType::Q4_K_X16P : DType::Q4_K);
  EXPECT_EQ(repacked_weight_type(DType::Q4_K, 768), q4_k_by_super_block);  // 3 super-blocks
  EXPECT_EQ(repacked_weight_type(DType::Q4_K, 200), DType::Q4_K);
  EXPECT_THROW(repack_weight_rows(DType::Q4_K, DType::Q4_K_X16P, buf.data(), 1, 768), Error);
  EXPECT_THROW(repack_weight_rows(DType::Q4_K, DType::Q4_K_X16, buf.data(), 1, 200), Error);
  EXPECT_THROW(repack_weight_rows(DType::Q4_K, DType::Q6_K_X16, buf.data(), 1, 512), Error);
  const DType q5_k_by_super_block = avx2 ? DType::Q5_K_X16 : DType::Q5_K;
  EXPECT_EQ(repacked_weight_type(DType::Q5_K, 2048), avx2 ? DType::Q5_K_X16P : DType::Q5_K);
  EXPECT_EQ(repacked_weight_type(DType::Q5_K, 768), q5_k_by_super_block);
  EXPECT_THROW(repack_weight_rows(DType::Q5_K, DType::Q5_K_X16P, buf.data(), 1, 768), Error);
  EXPECT_THROW(repack_weight_rows(DType::Q5_K, DType::Q4_K_X16, buf.data(), 1, 512), Error);
  const DType iq4_xs_by_super_block = avx2 ? DType::IQ4_XS_X16 : DType::IQ4_XS;
  EXPECT_EQ(repacked_weight_type(DType::IQ4_XS, 2048), avx2 ? DType::IQ4_XS_X16P : DType::IQ4_XS);
  EXPECT_EQ(repacked_weight_type(DType::IQ4_XS, 768), iq4_xs_by_super_block);
  EXPECT_THROW(repack_weight_rows(DType::IQ4_XS, DType::IQ4_XS_X16P, buf.data(), 1, 768), Error);
  EXPECT_EQ(repacked_weight_type(DType::IQ4_XS, 200), DType::IQ4_XS);
  EXPECT_THROW(repack_weight_rows(DType::IQ4_XS, DType::IQ4_XS_X16, buf.data(), 1, 200), Error);
  EXPECT_THROW(repack_weight_rows(DType::IQ4_XS, DType::Q4_K_X16, buf.data(), 1, 512), Error);
  EXPECT_EQ(repacked_weight_type(DType::Q3_K, 2048), cpu_kernel_isa() >= KernelIsa::avx512_vnni
                                                         ? DType::Q3_K_X16
                                                     : avx2 ? DType::Q3_K_X16S
                                                            : DType::Q3_K);
  EXPECT_THROW(repack_weight_rows(DType::Q3_K, DType::Q3_K_X16S, buf.data(), 1, 200), Error);
  EXPECT_THROW(repack_weight_rows(DType::Q3_K, DType::Q3_K_X16, buf.data(), 1, 200), Error);
  EXPECT_THROW(repack_weight_rows(DType::Q3_K, DType::IQ4_XS_X16, buf.data(), 1, 512), Error);
  EXPECT_EQ(repacked_weight_type(DType::Q2_K, 2048), avx2 ? DType::Q2_K_X16 : DType::Q2_K);
  EXPECT_EQ(repacked_weight_type(DType::Q2_K, 480), DType::Q2_K);
  EXPECT_THROW(repack_weight_rows(DType::Q2_K, DType::Q2_K_X16, buf.data(), 1, 200), Error);
  for (DType legacy : {DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::IQ4_NL}) {
    const DType x16 = legacy == DType::Q4_1   ? DType::Q4_1_X16
                      : legacy == DType::Q5_0 ? DType::Q5_0_X16
                      : legacy == DType::Q5_1 ? DType::Q5_1_X16
                                              : DType::IQ4_NL_X16;
    EXPECT_EQ(repacked_weight_type(legacy, 2048), avx2 ? x16 : legacy) << dtype_name(legacy);
    EXPECT_EQ(repacked_weight_type(legacy, 480), legacy) << dtype_name(legacy);
    EXPECT_THROW(repack_weight_rows(legacy, x16, buf.data(), 1, 480), Error);
  }
  for (const Pair& p : kPairs) {
    if (!k_pair(p.x16)) continue;
    EXPECT_EQ(repacked_weight_type(p.file, 2048), avx2 ? p.x16 : p.file);
    EXPECT_EQ(repacked_weight_type(p.file, 480), p.file);
    EXPECT_THROW(repack_weight_rows(p.file, p.x16, buf.data(), 1, 480), Error);
    EXPECT_THROW(repack_weight_rows(p.file, p.x16, buf.data(), 1, 200), Error);
    EXPECT_THROW(repack_weight_rows(p.file, DType::Q4_0_X16, buf.data(), 1, 512), Error);
  }
}

// The legacy group layouts: the round trip is exact, element 4k + j of block b is in
// nibble k / 4 of qs[64 (k % 4) + 4b + j], and (Q5_0, Q5_1) its fifth bit at bit k of
// qh[4b + j].
template <class Block, class Group>
void expect_group_round_trip_and_lanes(DType type, void (*arrange)(const Block*, Group*),
                                       void (*unarrange)(const Group&, Block*)) {
  Rng rng(11);
  const auto w = test::random_weights(type, 1, kQKX16, rng);
  const auto* blocks = reinterpret_cast<const Block*>(w.data());
  Group g;
  Block back[kX16Blocks];
  arrange(blocks, &g);
  unarrange(g, back);
  EXPECT_EQ(0, std::memcmp(back, blocks, sizeof back)) << dtype_name(type);
  for (int b = 0; b < kX16Blocks; ++b) {
    for (int e = 0; e < kQK8_0; ++e) {
      const int k = e / 4, n = 4 * b + e % 4;
      const int file = (blocks[b].qs[e % 16] >> (4 * (e / 16))) & 15;
      ASSERT_EQ(file, (g.qs[64 * (k % 4) + n] >> (4 * (k / 4))) & 15) << dtype_name(type);
      if constexpr (requires { g.qh; }) {
        uint32_t qh;
        std::memcpy(&qh, blocks[b].qh, sizeof qh);
        ASSERT_EQ((qh >> e) & 1u, (g.qh[n] >> k) & 1u) << dtype_name(type);
      }
    }
  }
}

// Q4_K_X16P, Q5_K_X16P: the round trip is exact, and element e of sub-block s of
// super-block S is in lane b = 8S + s where Q4_0_X16 puts element e of block b (Q5_K: its
// fifth bit where Q5_1_X16 puts it).
template <class Block, class Group>
void expect_k_pair_round_trip_and_lanes(DType type, void (*arrange)(const Block*, Group*),
                                        void (*unarrange)(const Group&, Block*)) {
  Rng rng(12);
  const auto w = test::random_weights(type, 1, kQKX16, rng);
  const auto* blocks = reinterpret_cast<const Block*>(w.data());
  Group g;
  Block back[2];
  arrange(blocks, &g);
  unarrange(g, back);
  EXPECT_EQ(0, std::memcmp(back, blocks, sizeof back)) << dtype_name(type);
  for (int b = 0; b < kX16Blocks; ++b) {
    const Block& sb = blocks[b / 8];
    const int s = b % 8;
    for (int e = 0; e < 32; ++e) {
      const int k = e / 4, n = 4 * b + e % 4;
      const int file = (sb.qs[32 * (s / 2) + e] >> (4 * (s % 2))) & 15;
      ASSERT_EQ(file, (g.qs[64 * (k % 4) + n] >> (4 * (k / 4))) & 15) << "lane " << b << " " << e;
      if constexpr (requires { g.qh; }) {
        ASSERT_EQ((sb.qh[e] >> s) & 1, (g.qh[n] >> k) & 1) << "lane " << b;
      }
    }
  }
  // Lane b's scale and min: sub-block b % 8's of super-block b / 8, as six-bit values.
  for (int b = 0; b < kX16Blocks; ++b) {
    int sc = 0, mn = 0;
    ref::q4_k_scale_min(blocks[b / 8].scales, b % 8, &sc, &mn);
    EXPECT_EQ(sc, ref::six_bit_value(g.head.scales, b)) << "lane " << b;
    EXPECT_EQ(mn, ref::six_bit_value(g.head.mins, b)) << "lane " << b;
  }
  EXPECT_EQ(blocks[1].d, g.head.d[1]);
  EXPECT_EQ(blocks[0].dmin, g.head.dmin[0]);
}

TEST(Interleaved, Iq4XsPairsRoundTripAndPlaceLanes) {
  Rng rng(13);
  const auto w = test::random_weights(DType::IQ4_XS, 1, kQKX16, rng);
  const auto* blocks = reinterpret_cast<const BlockIQ4_XS*>(w.data());
  BlockIQ4_XSx16P g;
  BlockIQ4_XS back[2];
  arrange_iq4_xs_x16p(blocks, &g);
  unarrange_iq4_xs_x16p(g, back);
  EXPECT_EQ(0, std::memcmp(back, blocks, sizeof back));
  for (int b = 0; b < kX16Blocks; ++b) {
    for (int e = 0; e < 32; ++e) {
      const int k = e / 4, n = 4 * b + e % 4;
      const int file = (blocks[b / 8].qs[16 * (b % 8) + e % 16] >> (4 * (e / 16))) & 15;
      ASSERT_EQ(file, (g.qs[64 * (k % 4) + n] >> (4 * (k / 4))) & 15) << "lane " << b << " " << e;
    }
  }
}

TEST(Interleaved, KPairsRoundTripAndPlaceLanes) {
  expect_k_pair_round_trip_and_lanes(DType::Q4_K, arrange_q4_k_x16p, unarrange_q4_k_x16p);
  expect_k_pair_round_trip_and_lanes(DType::Q5_K, arrange_q5_k_x16p, unarrange_q5_k_x16p);
}

TEST(Interleaved, LegacyGroupsRoundTripAndPlaceLanes) {
  expect_group_round_trip_and_lanes(DType::Q4_1, arrange_q4_1_x16, unarrange_q4_1_x16);
  expect_group_round_trip_and_lanes(DType::Q5_0, arrange_q5_0_x16, unarrange_q5_0_x16);
  expect_group_round_trip_and_lanes(DType::Q5_1, arrange_q5_1_x16, unarrange_q5_1_x16);
  expect_group_round_trip_and_lanes(DType::IQ4_NL, arrange_iq4_nl_x16, unarrange_iq4_nl_x16);
}

// arrange then unarrange gives back the file block byte for byte, and the nibbles land
// where blocks.h says: element 16j + 4k + i at byte 64 (k % 2) + 4j + i, nibble k / 2.
TEST(Interleaved, Iq4XsArrangeRoundTripsAndPlacesLanes) {
  Rng rng(9);
  const auto w = test::random_weights(DType::IQ4_XS, 1, 4 * kQK_K, rng);
  const auto* blocks = reinterpret_cast<const BlockIQ4_XS*>(w.data());
  for (int b = 0; b < 4; ++b) {
    BlockIQ4_XSx16 x;
    BlockIQ4_XS back;
    arrange_iq4_xs_x16(&blocks[b], &x);
    unarrange_iq4_xs_x16(x, &back);
    EXPECT_EQ(0, std::memcmp(&back, &blocks[b], sizeof back)) << "block " << b;
    for (int e = 0; e < kQK_K; ++e) {
      const int file = (blocks[b].qs[16 * (e / 32) + e % 16] >> (4 * ((e % 32) / 16))) & 15;
      const int j = e / 16, k = (e % 16) / 4, i = e % 4;
      const int lane = (x.qs[64 * (k % 2) + 4 * j + i] >> (4 * (k / 2))) & 15;
      ASSERT_EQ(file, lane) << "element " << e;
    }
  }
}

TEST(Interleaved, ActivationLayoutIsTheSameAtEveryLevelAndHoldsQ8_0) {
  Rng rng(2);
  const int64_t cols = 1024;
  auto x = test::normal_floats(rng, cols, 2.0f);
  // Blocks with special scales: all zeros, tiny (subnormal halves), values whose scale
  // rounds up to the next half, exact .5 multiples of the step, half overflow, infinity,
  // NaN (skipped by the scale, quantized as +127 (Q8_0) or 0 (Q8_K) as the scalar code does).
  for (int i = 0; i < 32; ++i) {
    x[static_cast<size_t>(i)] = 0.0f;
    x[static_cast<size_t>(32 + i)] = 1e-7f * static_cast<float>(i - 16);
    x[static_cast<size_t>(64 + i)] = 127.0f * 0.0999f + 0.01f * static_cast<float>(i);
    x[static_cast<size_t>(96 + i)] = 0.5f * static_cast<float>(i - 16);
    x[static_cast<size_t>(128 + i)] = 1e7f * static_cast<float>(i - 16);
  }
  x[160] = INFINITY;
  // A NaN in each half of a Q8_0 block, and one in a Q8_K super-block of normal values.
  x[600] = NAN;
  x[633] = NAN;
  x[900] = NAN;
  const auto ref =
      activations(DType::Q8_0_X16A, x, 1, cols, reference_type_traits(DType::Q8_0_X16A));
  const auto fast = activations(DType::Q8_0_X16A, x, 1, cols, type_traits(DType::Q8_0_X16A));
  EXPECT_EQ(ref, fast);
  // Dequantized, it is exactly the Q8_0 activation row.
  const auto q8 = activations(DType::Q8_0, x, 1, cols, reference_type_traits(DType::Q8_0));
  std::vector<float> a(static_cast<size_t>(cols)), b(a.size());
  reference_type_traits(DType::Q8_0).to_float(q8.data(), a.data(), cols);
  reference_type_traits(DType::Q8_0_X16A).to_float(ref.data(), b.data(), cols);
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
  // Q8_0_X16AT (the AMX GEMMs' activations): the same groups, then each block's quants in
  // order, as the Q8_0 row holds them; the same bytes from every table.
  const auto at_ref =
      activations(DType::Q8_0_X16AT, x, 1, cols, reference_type_traits(DType::Q8_0_X16AT));
  EXPECT_EQ(at_ref, activations(DType::Q8_0_X16AT, x, 1, cols, type_traits(DType::Q8_0_X16AT)));
  if (cpu_kernel_isa() >= KernelIsa::avx512_vnni) {
    EXPECT_EQ(at_ref, activations(DType::Q8_0_X16AT, x, 1, cols,
                                  type_traits_for(KernelIsa::avx512_vnni, DType::Q8_0_X16AT)));
  }
  EXPECT_EQ(at_ref, with_tile_rows(ref.data(), static_cast<int64_t>(ref.size()), 1, cols));
  ASSERT_EQ(at_ref.size(), ref.size() + static_cast<size_t>(cols));
  const auto* q8_blocks = reinterpret_cast<const BlockQ8_0*>(q8.data());
  for (int64_t j = 0; j < cols / 32; ++j) {
    EXPECT_EQ(0, std::memcmp(at_ref.data() + ref.size() + 32 * j, q8_blocks[j].qs, 32))
        << "block " << j;
  }

  // Q8_K_X16A likewise holds the Q8_K row, with each sub-block's bias = -32 * its sum.
  const auto k_ref =
      activations(DType::Q8_K_X16A, x, 1, cols, reference_type_traits(DType::Q8_K_X16A));
  EXPECT_EQ(k_ref, activations(DType::Q8_K_X16A, x, 1, cols, type_traits(DType::Q8_K_X16A)));
  const auto q8k = activations(DType::Q8_K, x, 1, cols, reference_type_traits(DType::Q8_K));
  reference_type_traits(DType::Q8_K).to_float(q8k.data(), a.data(), cols);
  reference_type_traits(DType::Q8_K_X16A).to_float(k_ref.data(), b.data(), cols);
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
  const auto* kb = reinterpret_cast<const BlockQ8_Kx16A*>(k_ref.data());
  for (int j = 0; j < 16; ++j) {
    int32_t sum = 0;
    for (int k = 0; k < 4; ++k) {
      for (int i = 0; i < 4; ++i) sum += kb[1].qs[64 * k + 4 * j + i];
    }
    EXPECT_EQ(kb[1].bias[j], -32 * sum) << "sub-block " << j;
    // And in the last line, sub-blocks 2k, 2k + 1 in the high dword of qword k (Q2_K_X16).
    EXPECT_EQ(kb[1].neg_sums[4 * (j / 2) + j % 2], -sum) << "sub-block " << j;
    if (j / 2 < 7) {
      EXPECT_EQ(kb[1].neg_sums[4 * (j / 2) + 2 + j % 2], 0) << "sub-block " << j;
    }
  }
}

TEST(Interleaved, ScalarModelsMatchFileLayoutsUpToRounding) {
  Rng rng(3);
  const int64_t rows = 16, cols = 2048;
  for (const Pair& p : kPairs) {
    const auto w = test::random_weights(p.file, rows, cols, rng);
    const auto x16 = repacked(p, w, rows, cols);
    const auto x = test::normal_floats(rng, cols, 2.0f);
    const auto a8 = activations(p.file_act, x, 1, cols, reference_type_traits(p.file_act));
    const auto a16 = activations(p.x16_act, x, 1, cols, reference_type_traits(p.x16_act));
    const int64_t wb = row_bytes(p.file, cols);
    // Q4_K_X16P takes Q8_0_X16A, not the file layout's Q8_K: against the exact dot product
    // of the dequantized rows instead.
    const bool own_activations = (p.x16_act == DType::Q8_0_X16A) != (p.file_act == DType::Q8_0);
    std::vector<float> wf(static_cast<size_t>(cols)), af(wf.size());
    reference_type_traits(p.x16_act).to_float(a16.data(), af.data(), cols);
    for (int64_t r = 0; r < rows; ++r) {
      const float got = reference_type_traits(p.x16).vec_dot(cols, x16.data() + r * wb, a16.data());
      if (own_activations) {
        reference_type_traits(p.file).to_float(w.data() + r * wb, wf.data(), cols);
        double want = 0.0, mass = 0.0;
        for (size_t i = 0; i < wf.size(); ++i) {
          want += static_cast<double>(wf[i]) * af[i];
          mass += std::fabs(static_cast<double>(wf[i]) * af[i]);
        }
        EXPECT_NEAR(got, want, 1e-6 * mass + 1e-5) << dtype_name(p.x16) << " row " << r;
        continue;
      }
      const float want = reference_type_traits(p.file).vec_dot(cols, w.data() + r * wb, a8.data());
      EXPECT_NEAR(got, want, 1e-5f * (1.0f + std::fabs(want))) << dtype_name(p.x16) << " row " << r;
    }
  }
}

// One gemm of a level's kernels on random weights and activations, and each row's vec_dot,
// against the scalar model, output by output. With 5 rows, row 3 carries the largest half and
// an infinity among its scales.
void expect_gemm_matches_scalar_model(const Kernels& k, const Pair& p, int64_t rows, int64_t cols,
                                      int64_t n_tokens, Rng& rng) {
  auto w = repacked(p, test::random_weights(p.file, rows, cols, rng), rows, cols);
  const int64_t wb = row_bytes(p.x16, cols);
  if (rows == 5) {
    *row_scale(p, w.data() + 3 * wb, 0) = 0x7bff;
    *row_scale(p, w.data() + 3 * wb, 1) = 0x7c00;
  }
  const auto x = test::normal_floats(rng, n_tokens * cols, 3.0f);
  const auto a = activations(p.x16_act, x, n_tokens, cols, reference_type_traits(p.x16_act));
  const int64_t ab = row_bytes(p.x16_act, cols);
  expect_outputs_match_scalar_model(k, p.x16, w.data(), wb, rows, cols, a.data(), ab, n_tokens,
                                    "cols " + std::to_string(cols) + " rows " +
                                        std::to_string(rows) + " tokens " +
                                        std::to_string(n_tokens));
}

// Every output of a level's kernels against the scalar model, for every tile shape: with
// AVX-512, 2 and 5 rows by 4, 5 and 9 tokens run the GEMM's 2 x 4 register blocks (every
// x16 type has one), 5 rows with a row left over, 5 and 9 tokens with 1 token left over.
void expect_level_matches_scalar_models(const Kernels& k) {
  Rng rng(4);
  for (const Pair& p : kPairs) {
    for (const int64_t cols : {512, 1536, 2048}) {
      for (const int64_t rows : {1, 2, 5}) {
        for (const int64_t n_tokens : {1, 2, 3, 4, 5, 9})
          expect_gemm_matches_scalar_model(k, p, rows, cols, n_tokens, rng);
      }
    }
  }
}

// The K-quant x16 kernels at their integer extremes: quants all at one end (0 or the
// largest), the largest sub-block scales and mins (Q6_K's most negative too), activation
// quants all +127 or -127. The AVX-512 register blocks apply the scales in 16-bit (Q4_K)
// or float (Q5_K, Q6_K) products that are exact only within these bounds. A last pass
// fills the scale bytes at random (every bit pattern of the packed 6-bit scales and mins).
void expect_extremes_match_scalar_models(const Kernels& k) {
  const int64_t cols = 512, rows = 2, n_tokens = 4;
  const int64_t nb = cols / kQK_K;
  std::vector<BlockQ8_Kx16A> a(static_cast<size_t>(n_tokens * nb));
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t b = 0; b < nb; ++b) {
      BlockQ8_Kx16A& ab = a[static_cast<size_t>(t * nb + b)];
      const int8_t v = (t % 2 == 0) ? 127 : -127;
      std::memset(ab.qs, static_cast<uint8_t>(v), sizeof ab.qs);
      for (int j = 0; j < 16; ++j) ab.bias[j] = -32 * 16 * v;
      ab.d = 0.5f + static_cast<float>(t);
    }
  }
  const int64_t ab_bytes = nb * static_cast<int64_t>(sizeof(BlockQ8_Kx16A));
  Rng rng(5);
  for (const DType type : {DType::Q6_K_X16, DType::Q4_K_X16, DType::Q5_K_X16, DType::Q2_K_X16}) {
    const int64_t wb = row_bytes(type, cols);
    // Row 0: quants 0, row 1: the largest; scales at their largest (or most negative).
    for (const int scale_byte : {0x80, 0x7f, 0xff, -1}) {  // -1: random bytes
      const auto fill_scales = [&](void* p, size_t n) {
        auto* bytes = static_cast<uint8_t*>(p);
        for (size_t i = 0; i < n; ++i)
          bytes[i] = static_cast<uint8_t>(scale_byte < 0 ? rng.next() >> 56 : scale_byte);
      };
      std::vector<uint8_t> w(static_cast<size_t>(rows * wb));
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t b = 0; b < nb; ++b) {
          uint8_t* row = w.data() + r * wb;
          const uint8_t q = r == 0 ? 0x00 : 0xff;
          if (type == DType::Q6_K_X16) {
            auto& blk = reinterpret_cast<BlockQ6_Kx16*>(row)[b];
            std::memset(blk.ql, q, sizeof blk.ql);
            std::memset(blk.qh, q, sizeof blk.qh);
            fill_scales(blk.scales, sizeof blk.scales);
            blk.d = 0x3c00;  // 1
          } else if (type == DType::Q4_K_X16) {
            auto& blk = reinterpret_cast<BlockQ4_Kx16*>(row)[b];
            std::memset(blk.qs, q, sizeof blk.qs);
            fill_scales(blk.scales, sizeof blk.scales);
            blk.d = 0x3c00, blk.dmin = 0x3800;  // 1, 0.5
          } else if (type == DType::Q2_K_X16) {
            auto& blk = reinterpret_cast<BlockQ2_Kx16*>(row)[b];
            std::memset(blk.qs, q, sizeof blk.qs);
            fill_scales(blk.scales, sizeof blk.scales);
            blk.d = 0x3c00, blk.dmin = 0x3800;
          } else {
            auto& blk = reinterpret_cast<BlockQ5_Kx16*>(row)[b];
            std::memset(blk.qs, q, sizeof blk.qs);
            std::memset(blk.qh, q, sizeof blk.qh);
            fill_scales(blk.scales, sizeof blk.scales);
            blk.d = 0x3c00, blk.dmin = 0x3800;
          }
        }
      }
      expect_outputs_match_scalar_model(k, type, w.data(), wb, rows, cols,
                                        reinterpret_cast<const uint8_t*>(a.data()), ab_bytes,
                                        n_tokens, "scale byte " + std::to_string(scale_byte));
    }
  }
}

TEST(Interleaved, Avx2KernelsMatchScalarModelsBitForBit) {
  if (cpu_kernel_isa() < KernelIsa::avx2) GTEST_SKIP() << "no AVX2 on this CPU (or STRATA_NO_AVX2)";
  expect_level_matches_scalar_models(KernelIsa::avx2);
  expect_extremes_match_scalar_models(KernelIsa::avx2);
}

// The avx2 level's AVX-VNNI kernels (the group layouts; the other types keep AVX2's).
TEST(Interleaved, AvxVnniKernelsMatchScalarModelsBitForBit) {
  if (!cpu_has_avx_vnni()) GTEST_SKIP() << "no AVX-VNNI on this CPU (or STRATA_NO_AVX_VNNI)";
  expect_level_matches_scalar_models(Kernels(KernelIsa::avx2, true));
  expect_extremes_match_scalar_models(Kernels(KernelIsa::avx2, true));
}

TEST(Interleaved, Avx512KernelsMatchScalarModelsBitForBit) {
  if (cpu_kernel_isa() < KernelIsa::avx512_vnni) {
    GTEST_SKIP() << "no AVX-512 VNNI on this CPU (or STRATA_NO_AVX512)";
  }
  expect_level_matches_scalar_models(KernelIsa::avx512_vnni);
  expect_extremes_match_scalar_models(KernelIsa::avx512_vnni);
}

// Rows long enough that the GEMM's register blocks take them in several spans of groups
// (token_tiles.h: the group layouts' 8192 columns are 16 groups in 3 spans, the last one
// shorter; the K layouts take whole rows), their accumulators carried between spans; 131
// rows also run past one carry buffer (64 rows), with a row left over.
TEST(Interleaved, Avx512GemmBlocksOverSeveralSpansMatchScalarModels) {
  if (cpu_kernel_isa() < KernelIsa::avx512_vnni) {
    GTEST_SKIP() << "no AVX-512 VNNI on this CPU (or STRATA_NO_AVX512)";
  }
  Rng rng(8);
  for (const Pair& p : kPairs) {
    for (const int64_t rows : {5, 131}) {
      for (const int64_t n_tokens : {4, 9})
        expect_gemm_matches_scalar_model(KernelIsa::avx512_vnni, p, rows, 8192, n_tokens, rng);
    }
  }
}

// The AVX2 row tiles over spans (token_tiles.h): a 4-token tile of a group layout at 10240
// columns reads 57-62 KB a row pass, so it runs 3 spans of 7, 7 and 6 groups, its
// accumulators carried between them; 131 rows run past one carry buffer (64 rows). Both
// builds of the tiles where the CPU has AVX-VNNI.
TEST(Interleaved, Avx2TilesOverSeveralSpansMatchScalarModels) {
  if (cpu_kernel_isa() < KernelIsa::avx2) GTEST_SKIP() << "no AVX2 on this CPU (or STRATA_NO_AVX2)";
  std::vector<Kernels> levels{Kernels(KernelIsa::avx2)};
  if (cpu_has_avx_vnni()) levels.emplace_back(KernelIsa::avx2, true);
  Rng rng(9);
  for (const Kernels& k : levels) {
    for (const Pair& p : kPairs) {
      for (const int64_t rows : {5, 131}) {
        for (const int64_t n_tokens : {4, 9})
          expect_gemm_matches_scalar_model(k, p, rows, 10240, n_tokens, rng);
      }
    }
  }
}

// The AMX GEMMs of the group layouts (amx_group_gemm.h) and of the lane-scaled K layouts
// (amx_lane_gemm.h: Q3_K_X16, Q6_K_X16): their scalar model of the tile instructions on
// every AVX-512 VNNI CPU (every token count goes through the tiles), and the tiles
// themselves where the CPU and OS allow AMX. The level and extremes tests give them 1-9
// tokens and 1-5 rows; here whole and partial 16-row slabs and 16-token tiles (on AMX
// hardware from 32 tokens on, kAmxMinTokens), one and three groups (two and six
// super-blocks) per row, row 3 of 5 with the largest and an infinite scale, and 1030 rows.
bool has_amx_gemm(const Pair& p) {
  return p.x16_act == DType::Q8_0_X16A || p.x16 == DType::Q3_K_X16 || p.x16 == DType::Q6_K_X16;
}

void expect_amx_matches_scalar_models(const Kernels& k) {
  Rng rng(6);
  for (const Pair& p : kPairs) {
    if (!has_amx_gemm(p)) continue;
    for (const int64_t cols : {512, 1536}) {
      for (const int64_t rows : {5, 16, 37}) {
        for (const int64_t n_tokens : {16, 33, 50})
          expect_gemm_matches_scalar_model(k, p, rows, cols, n_tokens, rng);
      }
    }
  }
  // More rows than one call's buffers take (kAmxMaxRows, 1024): the rest in a second call.
  expect_gemm_matches_scalar_model(k, kPairs[0], 1030, 512, 33, rng);
  ASSERT_EQ(kPairs[2].x16, DType::Q6_K_X16);
  expect_gemm_matches_scalar_model(k, kPairs[2], 1030, 512, 33, rng);
}

TEST(Interleaved, AmxGemmsModelMatchesScalarModelsBitForBit) {
  if (cpu_kernel_isa() < KernelIsa::avx512_vnni) {
    GTEST_SKIP() << "no AVX-512 VNNI on this CPU (or STRATA_NO_AVX512): the AMX GEMMs' model "
                    "uses AVX-512 around the tiles";
  }
  expect_amx_matches_scalar_models(Kernels(AmxTiles::emulated));
  expect_level_matches_scalar_models(Kernels(AmxTiles::emulated));
  expect_extremes_match_scalar_models(Kernels(AmxTiles::emulated));
}

TEST(Interleaved, AmxGemmsMatchScalarModelsBitForBit) {
  if (!cpu_has_amx_int8()) {
    GTEST_SKIP() << "no AMX-INT8 on this CPU (or STRATA_NO_AMX, or the OS refused the tile "
                    "state): the tile instructions' scalar model is tested instead";
  }
  expect_amx_matches_scalar_models(Kernels(AmxTiles::hardware));
  expect_level_matches_scalar_models(Kernels(AmxTiles::hardware));
  expect_extremes_match_scalar_models(Kernels(AmxTiles::hardware));
}

// The 512-element group layouts at their integer extremes: row 0's quant bytes all 0, row
// 1's all 0xff (nibbles 15, fifth bits set: 31), the K pairs' six-bit scales and mins all
// 63, activation quants all +127 (token 0) or -127 (token 1). The AVX2 kernels sum
// vpmaddubsw pairs in int16, exact only within these bounds.
TEST(Interleaved, GroupKernelsAtQuantExtremesMatchScalarModels) {
  const int64_t cols = 2 * kQKX16, rows = 2, n_tokens = 2, ng = cols / kQKX16;
  std::vector<BlockQ8_0x16A> a(static_cast<size_t>(n_tokens * ng));
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t g = 0; g < ng; ++g) {
      BlockQ8_0x16A& ag = a[static_cast<size_t>(t * ng + g)];
      const int8_t v = t == 0 ? 127 : -127;
      std::memset(ag.qs, static_cast<uint8_t>(v), sizeof ag.qs);
      for (int b = 0; b < kX16Blocks; ++b)
        ag.sum[b] = 32 * v, ag.d[b] = 0.5f + static_cast<float>(t);
    }
  }
  const int64_t ab = ng * static_cast<int64_t>(sizeof(BlockQ8_0x16A));
  for (const DType type : {DType::Q4_1_X16, DType::Q5_0_X16, DType::Q5_1_X16, DType::IQ4_NL_X16,
                           DType::Q4_K_X16P, DType::Q5_K_X16P, DType::IQ4_XS_X16P}) {
    const int64_t wb = row_bytes(type, cols), group_bytes = wb / ng;
    std::vector<uint8_t> w(static_cast<size_t>(rows * wb));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t g = 0; g < ng; ++g) {
        uint8_t* group = w.data() + r * wb + g * group_bytes;
        std::memset(group, r == 0 ? 0x00 : 0xff, static_cast<size_t>(group_bytes));
        // Finite scales: fp16 1 and 0.5 in every d, m, dmin (they lead each group).
        auto* halves = reinterpret_cast<uint16_t*>(group);
        if (type == DType::Q4_K_X16P || type == DType::Q5_K_X16P) {
          auto& head = reinterpret_cast<KPairHead*>(group)[0];
          head.d[0] = head.d[1] = 0x3c00, head.dmin[0] = head.dmin[1] = 0x3800;
        } else if (type == DType::IQ4_XS_X16P) {
          auto& head = reinterpret_cast<IQ4XSPairHead*>(group)[0];
          head.d[0] = head.d[1] = 0x3c00;
        } else {
          const bool has_min = type == DType::Q4_1_X16 || type == DType::Q5_1_X16;
          for (int i = 0; i < (has_min ? 2 : 1) * kX16Blocks; ++i)
            halves[i] = i < 16 ? 0x3c00 : 0x3800;
        }
      }
    }
    for (const Kernels& k : kernel_tables()) {
      expect_outputs_match_scalar_model(k, type, w.data(), wb, rows, cols,
                                        reinterpret_cast<const uint8_t*>(a.data()), ab, n_tokens,
                                        k.name() + " extremes");
    }
  }
}

// The K pairs' GEMM unpacks each row's lane factors once for all token tiles, in chunks of
// rows whose factors fit its buffer (32K floats: 32 rows of 16384 columns); 35 rows make a
// second chunk with a row left over, 5 tokens a tile and a token left over. Every output
// is still the scalar model's.
TEST(Interleaved, KPairGemmOverSeveralFactorChunksMatchesScalarModels) {
  if (cpu_kernel_isa() < KernelIsa::avx512_vnni) {
    GTEST_SKIP() << "no AVX-512 VNNI on this CPU (or STRATA_NO_AVX512)";
  }
  Rng rng(11);
  for (const Pair& p : kPairs) {
    if (k_pair(p.x16))
      expect_gemm_matches_scalar_model(KernelIsa::avx512_vnni, p, 35, 16384, 5, rng);
  }
}

// Q3_K likewise: the round trip is exact and element 16j + 4k + i (n = 4j + i) lands at bits
// 2k, 2k + 1 of qs[n] and bit n % 8 of hmask[8k + n / 8] (Q3_K_X16S: its own bit-2 plane).
TEST(Interleaved, Q3KArrangeRoundTripsAndPlacesLanes) {
  Rng rng(10);
  const auto w = test::random_weights(DType::Q3_K, 1, 4 * kQK_K, rng);
  const auto* blocks = reinterpret_cast<const BlockQ3_K*>(w.data());
  for (int b = 0; b < 4; ++b) {
    BlockQ3_Kx16 x;
    BlockQ3_K back;
    arrange_q3_k_x16(&blocks[b], &x);
    unarrange_q3_k_x16(x, &back);
    EXPECT_EQ(0, std::memcmp(&back, &blocks[b], sizeof back)) << "block " << b;
    for (int e = 0; e < kQK_K; ++e) {
      const int file = ((blocks[b].qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3) |
                       ((blocks[b].hmask[e % 32] >> (e / 32)) & 1) << 2;
      const int k = (e % 16) / 4, n = 4 * (e / 16) + e % 4;
      const int lane = ((x.qs[n] >> (2 * k)) & 3) | ((x.hmask[8 * k + n / 8] >> (n % 8)) & 1) << 2;
      ASSERT_EQ(file, lane) << "element " << e;
    }
    // Q3_K_X16S: the same quants, bit 2 at bit k + 4h of hmask[i] for byte n = 32h + i.
    BlockQ3_Kx16S xs;
    arrange_q3_k_x16s(&blocks[b], &xs);
    unarrange_q3_k_x16s(xs, &back);
    EXPECT_EQ(0, std::memcmp(&back, &blocks[b], sizeof back)) << "block " << b;
    EXPECT_EQ(0, std::memcmp(xs.qs, x.qs, sizeof xs.qs));
    for (int k = 0; k < 4; ++k) {
      for (int n = 0; n < 64; ++n) {
        ASSERT_EQ((x.hmask[8 * k + n / 8] >> (n % 8)) & 1,
                  (xs.hmask[n % 32] >> (k + 4 * (n / 32))) & 1)
            << "vector " << k << " byte " << n;
      }
    }
  }
}

// Q2_K likewise: the round trip is exact and element 16j + 4k + i lands at bits 2k, 2k + 1
// of qs[4j + i].
TEST(Interleaved, Q2KArrangeRoundTripsAndPlacesLanes) {
  Rng rng(12);
  const auto w = test::random_weights(DType::Q2_K, 1, 4 * kQK_K, rng);
  const auto* blocks = reinterpret_cast<const BlockQ2_K*>(w.data());
  for (int b = 0; b < 4; ++b) {
    BlockQ2_Kx16 x;
    BlockQ2_K back;
    arrange_q2_k_x16(&blocks[b], &x);
    unarrange_q2_k_x16(x, &back);
    EXPECT_EQ(0, std::memcmp(&back, &blocks[b], sizeof back)) << "block " << b;
    for (int e = 0; e < kQK_K; ++e) {
      const int file = (blocks[b].qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
      const int k = (e % 16) / 4, n = 4 * (e / 16) + e % 4;
      ASSERT_EQ(file, (x.qs[n] >> (2 * k)) & 3) << "element " << e;
    }
  }
}

}  // namespace
}  // namespace strata::kernels
