// Embedding strata through its public API alone (include/strata/, linked against
// strata_api): greedy text after a prompt.
//
//   generate MODEL.gguf "PROMPT" N_TOKENS
//
// Built with include/ as its only include directory, so it compiles only while the
// public headers include nothing of the engine's internals.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "strata/engine.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s MODEL.gguf PROMPT N_TOKENS\n", argv[0]);
    return 2;
  }
  try {
    strata::EngineOptions options;
    options.model_path = argv[1];
    options.threads = 1;
    options.kv_type = strata::KvCacheType::kF32;
    auto engine = strata::Engine::create(options);
    strata::RequestOptions request;
    request.sampling.temperature = 0.0f;
    request.stop.max_tokens = std::stoi(argv[3]);
    engine->add_request(engine->tokenize(argv[2]), request);
    std::vector<int32_t> tokens;
    while (engine->has_work()) {
      for (const strata::RequestOutput& o : engine->step()) {
        tokens.insert(tokens.end(), o.new_tokens.begin(), o.new_tokens.end());
      }
    }
    const std::string text = engine->detokenize(tokens);
    std::fwrite(text.data(), 1, text.size(), stdout);
    const strata::EngineMetrics m = engine->metrics();
    std::fprintf(stderr, "%lld tokens generated in %lld steps\n",
                 static_cast<long long>(m.generation_tokens_total),
                 static_cast<long long>(m.steps));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
