# The public API: examples/generate.cpp compiles with include/ as its only include
# directory (checked here, at configure time) and, linked against strata_api, prints the
# same greedy text as `strata run`.
get_target_property(api_example_includes strata_example_generate INCLUDE_DIRECTORIES)
get_target_property(api_interface_includes strata_api INTERFACE_INCLUDE_DIRECTORIES)
if(api_example_includes OR NOT api_interface_includes STREQUAL "${PROJECT_SOURCE_DIR}/include")
  message(FATAL_ERROR "the public API example must see include/ only (has: ${api_example_includes}; "
                      "strata_api exports: ${api_interface_includes})")
endif()
set(api_model ${PROJECT_BINARY_DIR}/api_example/aidreams260K.gguf)
add_test(NAME api_example_equals_strata_run
         COMMAND sh -c "mkdir -p '${PROJECT_BINARY_DIR}/api_example' && \
'$<TARGET_FILE:strata>' convert llama2c '${STRATA_SHARED_DIR}/models/aidreams260K.bin' \
'${STRATA_SHARED_DIR}/models/aidreams260K.tok512.bin' '${api_model}' >/dev/null && \
a=$('$<TARGET_FILE:strata_example_generate>' '${api_model}' 'Once upon a time' 40) && \
b=$('$<TARGET_FILE:strata>' run -m '${api_model}' -p 'Once upon a time' -n 40 --temp 0 -t 1 2>/dev/null) && \
test -n \"$a\" && test \"$a\" = \"$b\"")
set_tests_properties(api_example_equals_strata_run PROPERTIES TIMEOUT 120)
