# The KV transfer tests load the tiny real models (strata_convert converts them) and run
# in-process servers (strata_server) for the prefill/decode end-to-end test.
if(TARGET test_engine)
  target_link_libraries(test_engine PRIVATE strata_convert strata_server)
endif()
