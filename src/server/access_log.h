// One line per request on stderr:
//   strata serve: access id=cmpl-1f.. POST /v1/completions 200 prompt=12 completion=16 ttft=0.0123s
//   total=0.0456s
#pragma once

#include <cstdint>
#include <string>

namespace strata::server {

struct AccessRecord {
  std::string id;  // response id, or "-" for requests that have none
  std::string method, path, remote;
  int status = 0;                                      // 499: the client went away first
  int64_t prompt_tokens = -1, completion_tokens = -1;  // -1: not a generation request
  double ttft_s = -1;                                  // -1: no token was generated
  double total_s = 0;
};

// Written with one write(2), so lines from different threads never interleave.
void log_access(const AccessRecord& r);

}  // namespace strata::server
