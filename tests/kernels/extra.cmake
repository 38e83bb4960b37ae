# The kernels with the page kick off (core/prefetch.h): the same bit-for-bit comparisons
# with the scalar models, so both settings give the same results.
add_test(NAME kernels_without_page_prefetch
         COMMAND ${CMAKE_COMMAND} -E env STRATA_NO_PAGE_PREFETCH=1 $<TARGET_FILE:test_kernels>
                 --gtest_filter=Interleaved*:KernelIsa*:Matmul*)
set_tests_properties(kernels_without_page_prefetch PROPERTIES TIMEOUT 600)
# The whole kernel suite at the AVX2 level on AVX-512 machines (CI's): the AVX2 kernels,
# the interleaved layouts' AVX2 kernels among them, against the scalar models.
add_test(NAME kernels_avx2_level
         COMMAND ${CMAKE_COMMAND} -E env STRATA_NO_AVX512=1 $<TARGET_FILE:test_kernels>)
set_tests_properties(kernels_avx2_level PROPERTIES TIMEOUT 600)
