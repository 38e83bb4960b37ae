// strata tokenize / detokenize: what the model sees.
//   strata tokenize -m MODEL.gguf [--no-bos] [--special] (TEXT | --file FILE)
//   strata detokenize -m MODEL.gguf ID...
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tools/commands.h"

namespace strata::tools {

void register_tokenize(CLI::App& app) {
  struct Flags {
    std::string model, text, file;
    bool no_bos = false, special = false;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand("tokenize", "print the token ids of a text");
  cmd->add_option("-m,--model", f->model, "model or vocabulary GGUF")->required();
  auto* text = cmd->add_option("text", f->text, "text to tokenize");
  auto* file = cmd->add_option("--file", f->file, "read the text from a file");
  text->excludes(file);
  cmd->add_flag("--no-bos", f->no_bos, "add no BOS token even where the model would");
  cmd->add_flag("--special", f->special,
                "parse special-token text (e.g. <|im_start|>) as special tokens");
  cmd->callback([f] {
    std::string input = f->text;
    if (!f->file.empty()) {
      std::ifstream in(f->file, std::ios::binary);
      if (!in) throw Error(f->file + ": cannot open");
      input.assign(std::istreambuf_iterator<char>(in), {});
    }
    const auto file = gguf::GgufFile::open(f->model);
    const Tokenizer tok = Tokenizer::from_gguf(file);
    const auto ids = tok.encode(input, !f->no_bos && tok.add_bos(), f->special);
    std::string line;
    for (size_t i = 0; i < ids.size(); ++i) line += (i ? " " : "") + std::to_string(ids[i]);
    std::printf("%s\n", line.c_str());
  });

  struct DetokFlags {
    std::string model;
    std::vector<std::string> ids;
  };
  auto d = std::make_shared<DetokFlags>();
  auto* dcmd = app.add_subcommand("detokenize", "print the text of token ids");
  dcmd->add_option("-m,--model", d->model, "model or vocabulary GGUF")->required();
  dcmd->add_option("ids", d->ids, "token ids")->required();
  dcmd->callback([d] {
    const auto file = gguf::GgufFile::open(d->model);
    const Tokenizer tok = Tokenizer::from_gguf(file);
    std::vector<int32_t> ids;
    for (const auto& s : d->ids) {
      size_t used = 0;
      long long v = -1;
      try {
        v = std::stoll(s, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != s.size() || v < 0 || v >= tok.n_vocab()) throw Error("bad token id '" + s + "'");
      ids.push_back(static_cast<int32_t>(v));
    }
    const std::string text = tok.decode(ids);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::printf("\n");
  });
}

}  // namespace strata::tools
