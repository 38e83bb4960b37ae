// Turns a request's prompts into token ids: completion prompts (text or ids) and chat
// messages rendered through the model's chat template (GGUF tokenizer.chat_template,
// or ChatML when the model has none). Runs on the I/O threads, never the engine's.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "chat_template/chat_template.h"
#include "server/request_parse.h"
#include "tokenizer/tokenizer.h"

namespace strata::server {

struct PreparedPrompt {
  std::vector<int32_t> ids;
  std::string text;  // what `echo` repeats
};

// The chat template's budgets per render (chat::RenderOptions has the meaning of each);
// exceeding one is a 400 naming it.
struct TemplateLimits {
  uint64_t max_work_units = chat::RenderOptions{}.max_work_units;
  uint64_t max_value_bytes = chat::RenderOptions{}.max_value_bytes;
  double deadline_s = 2.0;
};

class PromptBuilder {
 public:
  // `template_source` empty: the ChatML default. A template that does not parse throws.
  PromptBuilder(Tokenizer tokenizer, const std::string& template_source,
                const TemplateLimits& limits = {});

  // Text prompts get the model's BOS (as `strata run` does); control-token text in them
  // stays plain text unless `parse_special` (the request's "parse_special": true).
  std::vector<PreparedPrompt> completion_prompts(const std::vector<PromptInput>& prompts,
                                                 bool parse_special = false) const;
  // Renders `messages` (validated role/content objects) and tokenizes the result with
  // special tokens parsed in the template's own text only, never in the messages' (see
  // control_text_guard.h); a template error is a 400 naming `messages`.
  // `tools` (an array, or null for none) is the template's `tools` variable; a template
  // that does not use it gets them described in a system message instead.
  PreparedPrompt chat_prompt(const nlohmann::json& messages, bool add_generation_prompt = true,
                             const nlohmann::json& tools = nullptr) const;
  // Plain tokenization for /tokenize.
  std::vector<int32_t> tokenize(const std::string& text, bool add_special,
                                bool parse_special = false) const;

  const Tokenizer& tokenizer() const { return tokenizer_; }
  const std::string& template_name() const { return template_.name(); }
  const std::string& template_source() const { return template_.source(); }

 private:
  Tokenizer tokenizer_;
  chat::ChatTemplate template_;
  TemplateLimits limits_;
  std::string bos_text_, eos_text_;
};

}  // namespace strata::server
