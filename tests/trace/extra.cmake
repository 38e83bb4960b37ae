# test_trace links strata_trace alone by the folder rule; its end-to-end tests also run
# the model, the engine and the CLI with tracing on, and parse the files with nlohmann.
target_link_libraries(test_trace PRIVATE strata_lib)
add_dependencies(test_trace strata)
