#include "attention/kv_quantize.h"

#include "kernels/quant/traits.h"
#include "kv/kv_quant.h"

namespace strata::attention {

const KvQuantizeKernels& reference_kv_quantize() {
  static const KvQuantizeKernels k{kv_quant::store_q8_0, kv_quant::store_q4_0, "scalar"};
  return k;
}

const KvQuantizeKernels& kv_quantize() {
  static const KvQuantizeKernels k = [] {
    const kernels::KernelIsa isa = kernels::cpu_kernel_isa();
    if (isa >= kernels::KernelIsa::avx512_vnni)
      return KvQuantizeKernels{avx512::store_q8_0, avx512::store_q4_0, "avx512"};
    if (isa >= kernels::KernelIsa::avx2)
      return KvQuantizeKernels{avx2::store_q8_0, avx2::store_q4_0, "avx2"};
    return reference_kv_quantize();
  }();
  return k;
}

}  // namespace strata::attention
