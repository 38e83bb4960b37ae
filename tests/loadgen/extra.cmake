# test_loadgen links strata_loadgen (its folder's library); the dataset and end-to-end
# tests also convert the tiny model (strata_convert) and run the `strata` binary
# (`strata serve` as the server, `strata bench serve` as the client).
if(TARGET test_loadgen)
  target_link_libraries(test_loadgen PRIVATE strata_convert)
  add_dependencies(test_loadgen strata)
endif()
