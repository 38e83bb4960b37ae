# The prefix-key test loads a real tiny model through the engine to compare identities.
if(TARGET test_router)
  target_link_libraries(test_router PRIVATE strata_lib)
  add_dependencies(test_router strata)
endif()
