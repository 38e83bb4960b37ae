# The whole kernel suite at the AVX2 level on AVX-512 machines (CI's): the AVX2 kernels,
# the interleaved layouts' AVX2 kernels among them, against the scalar models.
add_test(NAME kernels_avx2_level
         COMMAND ${CMAKE_COMMAND} -E env STRATA_NO_AVX512=1 $<TARGET_FILE:test_kernels>)
set_tests_properties(kernels_avx2_level PROPERTIES TIMEOUT 600)
