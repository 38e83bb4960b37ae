// strata template (-m MODEL.gguf | --template FILE.jinja) --messages FILE.json
//   [--add-generation-prompt] [--bos-token S] [--eos-token S] [--now 2026-01-15T12:00:00Z]
// Prints exactly the rendered prompt: nothing added, no trailing newline.
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "chat_template/chat_template.h"
#include "core/error.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tools/commands.h"

namespace strata::tools {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open");
  return {std::istreambuf_iterator<char>(in), {}};
}

// Parses "YYYY-MM-DDTHH:MM:SSZ" (UTC).
std::time_t parse_utc(const std::string& s) {
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2dZ%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6 ||
      consumed != static_cast<int>(s.size())) {
    throw Error("--now: expected YYYY-MM-DDTHH:MM:SSZ, got '" + s + "'");
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return timegm(&tm);
}

}  // namespace

void register_template(CLI::App& app) {
  struct Flags {
    std::string model, template_path, messages, bos, eos, now;
    bool add_generation_prompt = false;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand("template", "render a chat template over a list of messages");
  auto* m = cmd->add_option("-m,--model", f->model, "model GGUF (its tokenizer.chat_template)");
  auto* t = cmd->add_option("--template", f->template_path, "a .jinja template file");
  m->excludes(t);
  cmd->add_option("--messages", f->messages, "JSON file: a list of {role, content} objects")
      ->required();
  cmd->add_flag("--add-generation-prompt", f->add_generation_prompt,
                "end with the assistant's turn opening");
  auto* bos = cmd->add_option("--bos-token", f->bos, "bos_token variable (default: the model's)");
  auto* eos = cmd->add_option("--eos-token", f->eos, "eos_token variable (default: the model's)");
  cmd->add_option("--now", f->now, "pin strftime_now's clock, e.g. 2026-01-15T12:00:00Z");
  cmd->callback([f, bos, eos] {
    if (f->model.empty() == f->template_path.empty())
      throw Error("give exactly one of -m or --template");
    chat::RenderOptions opts;
    opts.add_generation_prompt = f->add_generation_prompt;
    std::string source, name;
    if (!f->model.empty()) {
      const auto file = gguf::GgufFile::open(f->model);
      source = file.has("tokenizer.chat_template") ? file.get_string("tokenizer.chat_template")
                                                   : chat::default_chatml_template();
      name = f->model;
      const Tokenizer tok = Tokenizer::from_gguf(file);
      if (tok.bos_id() >= 0) opts.bos_token = tok.token_text(tok.bos_id());
      if (tok.eos_id() >= 0) opts.eos_token = tok.token_text(tok.eos_id());
    } else {
      source = read_text(f->template_path);
      name = f->template_path;
    }
    if (*bos) opts.bos_token = f->bos;
    if (*eos) opts.eos_token = f->eos;
    if (!f->now.empty()) opts.now = parse_utc(f->now);
    nlohmann::ordered_json messages;
    try {
      messages = nlohmann::ordered_json::parse(read_text(f->messages));
    } catch (const nlohmann::json::exception& e) {
      throw Error(f->messages + ": invalid JSON: " + e.what());
    }
    const chat::ChatTemplate tpl(std::move(source), name);
    const std::string out = tpl.render_ordered(messages, opts);
    std::fwrite(out.data(), 1, out.size(), stdout);
  });
}

}  // namespace strata::tools
