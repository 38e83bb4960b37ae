#include "attention/kv_dequant.h"

#include "core/fp16.h"
#include "kernels/quant/traits.h"
#include "kv/kv_quant.h"

namespace strata::attention {
namespace {

template <DType T>
void dequant_ref(const uint8_t* tile, bool keys, int64_t bs, int64_t hd, uint16_t* out) {
  const auto* scales = reinterpret_cast<const uint16_t*>(tile + kv_quant::scale_offset(T, bs, hd));
  const int64_t group = kv_quant::group_size(hd);
  const int64_t n_groups = hd / group;
  if (!keys && bs % 2 != 0) {  // the missing partner of the last slot
    for (int64_t d = 0; d < hd; ++d) out[kv_layout::bf16_value_index(bs, d, hd)] = 0;
  }
  for (int64_t slot = 0; slot < bs; ++slot) {
    for (int64_t d = 0; d < hd; ++d) {
      const float s =
          fp16_to_fp32(scales[kv_quant::scale_index(keys, d / group, slot, bs, n_groups)]);
      const int64_t at =
          keys ? kv_layout::quad_key_index(d, slot, bs) : kv_layout::value_index(slot, d, hd);
      const int q = T == DType::Q4_0 ? kv_quant::get_nibble(tile, at) - 8
                                     : static_cast<int>(reinterpret_cast<const int8_t*>(tile)[at]);
      const int64_t to =
          keys ? kv_layout::bf16_key_index(d, slot, bs) : kv_layout::bf16_value_index(slot, d, hd);
      out[to] = fp32_to_bf16(static_cast<float>(q) * s);
    }
  }
}

}  // namespace

const KvDequantKernels& reference_kv_dequant() {
  static const KvDequantKernels k{dequant_ref<DType::Q8_0>, dequant_ref<DType::Q4_0>, "scalar"};
  return k;
}

const KvDequantKernels& kv_dequant() {
  static const KvDequantKernels k = [] {
    const kernels::KernelIsa isa = kernels::cpu_kernel_isa();
    if (kernels::cpu_has_avx512_bf16())
      return KvDequantKernels{avx512bf16::dequant_q8_0, avx512bf16::dequant_q4_0, "avx512-bf16"};
    if (isa >= kernels::KernelIsa::avx512_vnni)
      return KvDequantKernels{avx512::dequant_q8_0, avx512::dequant_q4_0, "avx512"};
    if (isa >= kernels::KernelIsa::avx2)
      return KvDequantKernels{avx2::dequant_q8_0, avx2::dequant_q4_0, "avx2"};
    return reference_kv_dequant();
  }();
  return k;
}

}  // namespace strata::attention
