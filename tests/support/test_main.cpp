// The main of the test binaries that link the kernels: the kernel-level overrides of the
// environment (tools/isa_env.h: STRATA_NO_AVX512=1 and the like, as the ctest variants in
// the extra.cmake files set them) are passed to the kernels before any test runs.
#include <gtest/gtest.h>

#include "kernels/quant/traits.h"
#include "tools/isa_env.h"

int main(int argc, char** argv) {
  strata::kernels::init_cpu_kernels(strata::tools::isa_overrides_from_env());
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
