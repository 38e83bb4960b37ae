# The official openai Node.js client against `strata serve` (tests/http/node/).
# scripts/install-deps.sh installs the client (npm ci from the committed lock file).
# A machine without node, npm or that install fails this test; it never skips.
find_program(STRATA_NODE_EXECUTABLE node)
if(NOT STRATA_NODE_EXECUTABLE)
  set(STRATA_NODE_EXECUTABLE node)  # ctest then reports the missing executable as a failure
endif()
add_test(NAME http_openai_client
         COMMAND ${CMAKE_COMMAND} -E env "STRATA_BIN=$<TARGET_FILE:strata>" "STRATA_SHARED=${STRATA_SHARED_DIR}"
                 ${STRATA_NODE_EXECUTABLE} --test openai_client.test.mjs
         WORKING_DIRECTORY ${CMAKE_CURRENT_LIST_DIR}/node)
set_tests_properties(http_openai_client PROPERTIES TIMEOUT 300)

# Constrained output (json_schema, tool calls) through the same client, with Ajv validating.
add_test(NAME http_openai_structured
         COMMAND ${CMAKE_COMMAND} -E env "STRATA_BIN=$<TARGET_FILE:strata>" "STRATA_SHARED=${STRATA_SHARED_DIR}"
                 ${STRATA_NODE_EXECUTABLE} --test structured_output.test.mjs
         WORKING_DIRECTORY ${CMAKE_CURRENT_LIST_DIR}/node)
set_tests_properties(http_openai_structured PROPERTIES TIMEOUT 600)
