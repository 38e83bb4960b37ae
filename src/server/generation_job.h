// One /v1/completions or /v1/chat/completions request in flight: its sequences
// (prompts x n) in the engine, their detokenization and stop strings, and the response,
// streamed as server-sent events or sent whole at the end.
//
// Threads: engine callbacks only copy the output and post it to the connection's
// strand; everything else here (detokenizing, formatting, writing) runs on that strand,
// one call at a time, so the job needs no lock.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine_loop.h"
#include "engine/output_processor.h"
#include "server/access_log.h"
#include "server/admission.h"
#include "server/http_types.h"
#include "server/metrics.h"
#include "server/openai_format.h"
#include "server/prompt_builder.h"
#include "server/request_parse.h"

namespace strata::server {

// What every job shares; owned by the server, outlives the jobs.
struct GenerationContext {
  EngineLoop& loop;
  const EngineCore& engine;
  const Tokenizer& tokenizer;
  ServerMetrics& metrics;
  Admission& admission;
  std::string model_name;
};

class GenerationJob : public std::enable_shared_from_this<GenerationJob> {
 public:
  // The caller has acquired one admission slot per sequence; the job releases them as
  // its sequences leave the engine.
  // `arrival_s`: steady-clock time the request was read (latencies count from it).
  GenerationJob(GenerationContext& ctx, GenerationRequest request,
                std::vector<PreparedPrompt> prompts, std::shared_ptr<Responder> responder,
                AccessRecord access, double arrival_s);

  // Validates every sequence, then submits them all. Throws ApiError (400 for an
  // invalid request, 503 when the engine is shutting down) before anything is sent;
  // the slots of sequences not submitted are released then. Call on the strand.
  void start();

 private:
  struct Sequence {
    size_t prompt = 0;  // index into prompts_
    int32_t index = 0;  // the choice's index in the response
    RequestOptions options;
    RequestId id = 0;
    std::optional<OutputProcessor> processor;
    std::string text;                    // non-streamed: the whole output
    std::vector<TokenLogprob> logprobs;  // non-streamed: all of them
    nlohmann::json prompt_logprobs;      // echo with logprobs: the prompt's, once they came
    int64_t text_offset = 0;             // completions logprobs: offset of the next token
    int32_t n_prompt = 0, n_cached = 0, n_generated = 0;
    double first_token_s = -1, last_token_s = -1;
    FinishReason finish = FinishReason::kNone;  // set once answered
    bool engine_done = false;
  };

  void on_output(size_t seq, const RequestOutput& o, double t);
  void echo_prompt(Sequence& s, const RequestOutput& o);
  bool tools_active() const;
  ParsedOutput parse_calls(const Sequence& s) const;
  void end_tool_stream(Sequence& s, FinishReason fr);
  void record_timing(Sequence& s, const RequestOutput& o, double t);
  void emit(Sequence& s, const std::string& text, std::span<const TokenLogprob> lps,
            FinishReason fr);
  void write_chunk(nlohmann::json choice);
  void open_stream();
  void complete();
  void on_disconnect();
  nlohmann::json logprobs_json(Sequence& s, std::span<const TokenLogprob> lps);
  Usage usage() const;

  GenerationContext& ctx_;
  GenerationRequest request_;
  std::vector<PreparedPrompt> prompts_;
  std::shared_ptr<Responder> responder_;
  AccessRecord access_;
  double arrival_s_;
  ResponseHeader header_;
  std::vector<Sequence> seqs_;
  size_t n_answered_ = 0;
  bool client_gone_ = false, completed_ = false;
  std::string error_;  // the engine's reason for the first sequence that ended kError
};

}  // namespace strata::server
