// The public API: parses once, renders per request, and converts nlohmann::json input into
// interpreter values at the boundary (the only place that includes nlohmann/json.hpp).
#include "chat_template/chat_template.h"

#include <limits>
#include <new>
#include <stdexcept>

#include "chat_template/builtins.h"
#include "chat_template/parser.h"
#include "chat_template/renderer.h"
#include "core/error.h"

namespace strata::chat {

namespace {

constexpr int kMaxInputDepth = 200;  // nesting of message data; deeper input is rejected

template <class Json>
Value to_value(const Json& j, int depth) {
  if (depth > kMaxInputDepth)
    fail("input data nested more than " + std::to_string(kMaxInputDepth) + " levels deep");
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return Value::none();
    case nlohmann::json::value_t::boolean:
      return Value::boolean(j.template get<bool>());
    case nlohmann::json::value_t::number_integer:
      return Value::integer(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      uint64_t u = j.template get<uint64_t>();
      if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return Value::integer(static_cast<int64_t>(u));
      return Value::number(static_cast<double>(u));
    }
    case nlohmann::json::value_t::number_float:
      return Value::number(j.template get<double>());
    case nlohmann::json::value_t::string:
      return Value::string(j.template get<std::string>());
    case nlohmann::json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& item : j) items.push_back(to_value(item, depth + 1));
      return Value::make_list(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      Value d = Value::make_dict();
      for (auto it = j.begin(); it != j.end(); ++it)
        d.dict().set(Value::string(it.key()), to_value(it.value(), depth + 1));
      return d;
    }
    case nlohmann::json::value_t::binary:
      fail("binary JSON values are not supported");
    case nlohmann::json::value_t::discarded:
      return Value();
  }
  return Value();
}

template <class Json>
void add_variables(Scope& scope, const Json& vars, const char* what) {
  if (vars.is_null()) return;
  if (!vars.is_object()) fail(std::string(what) + " must be a JSON object");
  for (auto it = vars.begin(); it != vars.end(); ++it) scope.set(it.key(), to_value(it.value(), 0));
}

template <class Json>
std::string render_with(const Program& program, const std::string& name, const Json& messages,
                        const RenderOptions& opts, RenderStats* stats) {
  SandboxLimits limits{opts.max_loop_iterations, opts.max_recursion_depth, opts.max_output_bytes};
  BudgetLimits budget{opts.max_work_units, opts.max_value_bytes, opts.deadline_s,
                      opts.deadline.value_or(std::chrono::steady_clock::time_point::max())};
  Renderer renderer(name, limits, budget, opts.now ? *opts.now : std::time(nullptr));
  // Reports the cost on every exit, failures included.
  struct Report {
    const Renderer& renderer;
    RenderStats* stats;
    size_t output_bytes = 0;
    ~Report() {
      if (!stats) return;
      stats->work_units = renderer.budget().work_units();
      stats->peak_value_bytes = renderer.budget().peak_value_bytes();
      stats->seconds = renderer.budget().elapsed_s();
      stats->output_bytes = output_bytes;
    }
  } report{renderer, stats};
  try {
    auto globals = std::make_shared<Scope>(nullptr);
    try {
      add_variables(*globals, opts.extra, "RenderOptions::extra");
      add_variables(*globals, opts.extra_ordered, "RenderOptions::extra_ordered");
      if (!messages.is_array()) fail("messages must be a JSON array");
      globals->set("messages", to_value(messages, 0));
    } catch (const TemplateRuntimeError& e) {
      throw strata::Error(name + ": " + e.what());
    }
    globals->set("add_generation_prompt", Value::boolean(opts.add_generation_prompt));
    globals->set("bos_token", Value::string(opts.bos_token));
    globals->set("eos_token", Value::string(opts.eos_token));
    std::string out = renderer.render(program, globals);
    report.output_bytes = out.size();
    return out;
  } catch (const std::bad_alloc&) {
    throw strata::Error(name + ": out of memory while rendering the chat template");
  } catch (const std::length_error&) {
    throw strata::Error(name + ": value too large while rendering the chat template");
  }
}

}  // namespace

Value parse_json(std::string_view text) {
  auto j = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) fail("from_json: invalid JSON text");
  return to_value(j, 0);
}

ChatTemplate::ChatTemplate(std::string source, std::string name)
    : source_(std::move(source)), name_(std::move(name)) {
  program_ = std::make_unique<Program>(parse_template(source_, name_));
}

ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;

std::string ChatTemplate::render(const nlohmann::json& messages, const RenderOptions& opts,
                                 RenderStats* stats) const {
  return render_with(*program_, name_, messages, opts, stats);
}

std::string ChatTemplate::render_ordered(const nlohmann::ordered_json& messages,
                                         const RenderOptions& opts, RenderStats* stats) const {
  return render_with(*program_, name_, messages, opts, stats);
}

std::string default_chatml_template() {
  return "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
         "message['content'] + "
         "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ "
         "'<|im_start|>assistant\\n' }}{% endif %}";
}

}  // namespace strata::chat
