#include "server/prompt_builder.h"

#include "core/error.h"
#include "server/api_error.h"
#include "server/control_text_guard.h"

namespace strata::server {

PromptBuilder::PromptBuilder(Tokenizer tokenizer, const std::string& template_source,
                             const TemplateLimits& limits)
    : tokenizer_(std::move(tokenizer)),
      template_(template_source.empty() ? chat::default_chatml_template() : template_source,
                template_source.empty() ? "chatml" : "tokenizer.chat_template"),
      limits_(limits) {
  if (tokenizer_.bos_id() >= 0) bos_text_ = tokenizer_.token_text(tokenizer_.bos_id());
  if (tokenizer_.eos_id() >= 0) eos_text_ = tokenizer_.token_text(tokenizer_.eos_id());
}

std::vector<PreparedPrompt> PromptBuilder::completion_prompts(
    const std::vector<PromptInput>& prompts, bool parse_special) const {
  std::vector<PreparedPrompt> out;
  out.reserve(prompts.size());
  for (const PromptInput& p : prompts) {
    PreparedPrompt pp;
    if (const auto* text = std::get_if<std::string>(&p)) {
      pp.ids = tokenizer_.encode(*text, tokenizer_.add_bos(), parse_special);
      pp.text = *text;
    } else {
      pp.ids = std::get<std::vector<int32_t>>(p);
      pp.text = tokenizer_.decode(pp.ids);
    }
    out.push_back(std::move(pp));
  }
  return out;
}

PreparedPrompt PromptBuilder::chat_prompt(const nlohmann::json& messages_in,
                                          bool add_generation_prompt,
                                          const nlohmann::json& tools) const {
  nlohmann::json messages = messages_in;
  const bool with_tools = tools.is_array() && !tools.empty();
  if (with_tools && template_.source().find("tools") == std::string::npos) {
    // The template cannot show the tools: say what they are and how to call one.
    messages.insert(
        messages.begin(),
        nlohmann::json::object({{"role", "system"},
                                {"content",
                                 "You can call these functions. To call one, answer with only "
                                 "a JSON object {\"name\": <function name>, \"arguments\": "
                                 "<arguments object>}.\nFunctions: " +
                                     tools.dump()}}));
  }
  chat::RenderOptions ro;
  ro.add_generation_prompt = add_generation_prompt;
  ro.bos_token = bos_text_;
  ro.eos_token = eos_text_;
  ro.max_work_units = limits_.max_work_units;
  ro.max_value_bytes = limits_.max_value_bytes;
  ro.deadline_s = limits_.deadline_s;
  PreparedPrompt pp;
  ControlTextGuard guard(tokenizer_);
  // Tool descriptions are request text too: guarded like the messages.
  const nlohmann::json both = nlohmann::json::array({messages, with_tools ? tools : nullptr});
  const bool guarded = guard.scan(both, template_.source());
  const nlohmann::json& safe = guarded ? guard.protected_messages() : both;
  if (with_tools) ro.extra["tools"] = safe[1];
  try {
    pp.text = template_.render(safe[0], ro);
  } catch (const Error& e) {
    throw ApiError(400, std::string("messages: the chat template failed: ") + e.what(), "messages");
  }
  const std::vector<TextSpan> plain = guard.restore(pp.text);
  // Templates that write the BOS text themselves must not get a second BOS (a message
  // that starts the prompt with it does not count).
  const bool has_bos = !bos_text_.empty() && pp.text.starts_with(bos_text_) &&
                       (plain.empty() || plain.front().offset > 0);
  pp.ids = tokenizer_.encode_guarded(pp.text, tokenizer_.add_bos() && !has_bos, plain);
  return pp;
}

std::vector<int32_t> PromptBuilder::tokenize(const std::string& text, bool add_special,
                                             bool parse_special) const {
  return tokenizer_.encode(text, add_special && tokenizer_.add_bos(), parse_special);
}

}  // namespace strata::server
