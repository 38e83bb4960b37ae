// strata logits -m MODEL.gguf --tokens "ID ID ..." -o OUT.f32
// Runs the ids as one prompt (no BOS added) and writes n_tokens x n_vocab float32 LE.
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "engine/engine_core.h"
#include "engine/offline.h"
#include "model/model.h"
#include "tools/commands.h"
#include "tools/common.h"

namespace strata::tools {

void register_logits(CLI::App& app) {
  struct Flags {
    EngineFlags engine;
    std::string tokens, out;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand("logits", "write the logits at every position of a token prompt");
  f->engine.add(*cmd);
  cmd->add_option("--tokens", f->tokens, "token ids separated by spaces")->required();
  cmd->add_option("-o,--output", f->out, "output file (n_tokens x n_vocab float32)")->required();
  cmd->callback([f] {
    std::vector<int32_t> ids;
    std::istringstream in(f->tokens);
    std::string word;
    while (in >> word) {
      size_t used = 0;
      long long v = 0;
      try {
        v = std::stoll(word, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != word.size() || v < 0 || v > INT32_MAX)
        throw Error("--tokens: bad id '" + word + "'");
      ids.push_back(static_cast<int32_t>(v));
    }
    if (ids.empty()) throw Error("--tokens: no ids");
    auto model = Model::load(f->engine.model_path, f->engine.load_options());
    ThreadPool pool(f->engine.thread_count());
    EngineCore engine(*model, pool, f->engine.single_request_config(*model));
    RequestOptions o;
    o.stop.max_tokens = 0;
    o.prompt_logits = static_cast<int32_t>(ids.size());
    const std::vector<float> all = generate(engine, nullptr, {{"logits", ids, o}})[0].prompt_logits;
    std::ofstream out(f->out, std::ios::binary);
    if (!out) throw Error(f->out + ": cannot open for writing");
    out.write(reinterpret_cast<const char*>(all.data()),
              static_cast<std::streamsize>(all.size() * sizeof(float)));
    if (!out) throw Error(f->out + ": write failed");
    std::fprintf(stderr, "wrote %zu x %lld logits to %s\n", ids.size(),
                 static_cast<long long>(model->config().n_vocab), f->out.c_str());
  });
}

}  // namespace strata::tools
