# The golden model tests at the AVX2 level (weights repacked for the AVX2 kernels).
add_test(NAME golden_avx2_level
         COMMAND ${CMAKE_COMMAND} -E env STRATA_NO_AVX512=1 $<TARGET_FILE:test_golden>
                 --gtest_filter=AidreamsGolden*:GqaGolden*:BatchInvariance*)
set_tests_properties(golden_avx2_level PROPERTIES TIMEOUT 600)
