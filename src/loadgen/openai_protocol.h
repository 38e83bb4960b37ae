// The OpenAI wire format at the client: the body of one streamed request, and the
// record a streamed response makes (StreamRecorder), with vLLM benchmark_serving's
// timing rules:
//   - a chunk counts when it carries generated text (choices[0].text on
//     /v1/completions, choices[0].delta.content on /v1/chat/completions); the first
//     one sets TTFT, each later one adds an ITL gap, the last one sets E2E;
//   - output tokens are usage.completion_tokens when the server sends usage, else the
//     counted chunks; prompt tokens are usage.prompt_tokens, else the dataset's count;
//   - an HTTP error status, an error event, a stream broken before "data: [DONE]", a
//     chunk that is not JSON, or a stream with no generated text fails the request,
//     with a message saying which.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "loadgen/dataset.h"
#include "loadgen/sse.h"
#include "loadgen/stats.h"

namespace strata::loadgen {

struct RequestOptions {
  bool chat = false;        // /v1/chat/completions (else /v1/completions)
  std::string model;        // "" = leave the field out
  bool token_ids = false;   // completions: send the prompt as token ids
  bool ignore_eos = false;  // also sets min_tokens = max_tokens
  double temperature = 0;
  nlohmann::json extra = nlohmann::json::object();  // merged into the body last
};

nlohmann::json request_body(const Prompt& p, const RequestOptions& o);

class StreamRecorder {
 public:
  // start_s: when the request was sent, on the clock later calls use.
  StreamRecorder(bool chat, double start_s, int64_t prompt_tokens);

  void on_head(int status);
  void on_data(std::string_view bytes, double now_s);
  // transport_error: empty when the response ended normally.
  RequestRecord finish(const std::string& transport_error);

 private:
  void on_event(const std::string& data, double now_s);
  void fail(std::string message);

  bool chat_;
  double start_s_;
  int64_t dataset_prompt_tokens_;
  int status_ = 0;
  SseParser sse_;
  std::string error_body_;
  std::string error_;
  bool done_ = false;
  int64_t chunks_ = 0;
  double first_s_ = -1, last_s_ = -1;
  std::vector<double> itl_s_;
  int64_t usage_prompt_ = -1, usage_completion_ = -1;
};

}  // namespace strata::loadgen
