// Chat templates: the Jinja2 `tokenizer.chat_template` strings that models ship, rendered
// the way transformers' apply_chat_template renders them (Jinja2 sandbox with
// trim_blocks and lstrip_blocks, Python value semantics), by a sandboxed interpreter.
//
// Templates and message data are untrusted: every failure, including exceeding the
// sandbox limits below, throws strata::Error("template:line:col: message").
//
// Deliberate differences from Python's ImmutableSandboxedEnvironment: list and dict
// mutators (append, pop, update, ...) are allowed, because templates written for
// llama.cpp and vLLM use them; `from_json` is an extra filter; integers are 64-bit
// (overflow is an error, not a bigint); dunder attributes (`__class__`, ...) are an error
// rather than an undefined value; recursive for loops and include/import/extends are
// not supported.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace strata::chat {

struct RenderOptions {
  bool add_generation_prompt = false;
  std::string bos_token{}, eos_token{};
  std::optional<std::time_t> now{};  // pins strftime_now(); unset = the real clock (UTC)
  // Extra template variables (tools, documents, enable_thinking, ...). nlohmann::json
  // stores object keys sorted; use extra_ordered when key order must survive into the
  // output (tool schemas printed with tojson).
  nlohmann::json extra = nlohmann::json::object();
  nlohmann::ordered_json extra_ordered = nlohmann::ordered_json::object();  // wins over `extra`

  // Sandbox limits. Exceeding one throws strata::Error("name:line:col: ...") naming it.
  int64_t max_loop_iterations = 1'000'000;  // all loop iterations of one render (and range() sizes)
  int max_recursion_depth = 200;            // nested macro calls
  size_t max_output_bytes = 16 << 20;       // the output, and any single string built on the way
  // Budgets of one render (docs/TEMPLATE_SANDBOX.md has the measurements behind the
  // defaults). Work units: one per statement, expression, call and created value, plus one
  // per byte or element produced or scanned; a unit is roughly 1-10 ns.
  uint64_t max_work_units = 200'000'000;
  // Bytes of live values (strings, lists, dicts, output buffers), approximately: each
  // value counts its characters or elements plus a fixed overhead.
  uint64_t max_value_bytes = uint64_t{128} << 20;
  // Wall-clock limits: seconds from the start of render() (<= 0: none), and an absolute
  // time point (the request's deadline, say); the earlier applies. Read every ~1024 units.
  double deadline_s = 5.0;
  std::optional<std::chrono::steady_clock::time_point> deadline{};
};

// What one render cost, for reporting headroom against the budgets above. Filled also
// when the render fails (then it is the cost up to the failure).
struct RenderStats {
  uint64_t work_units = 0;
  uint64_t peak_value_bytes = 0;  // the most live value bytes at any time
  double seconds = 0;
  size_t output_bytes = 0;
};

struct Program;

class ChatTemplate {
 public:
  // Parses `source` now; `name` prefixes error messages.
  ChatTemplate(std::string source, std::string name);
  ~ChatTemplate();
  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;

  // messages: an array of {role, content, ...} objects. Rendering is const and
  // thread-safe: each call has its own interpreter state.
  // `stats`, if given, receives the render's cost.
  std::string render(const nlohmann::json& messages, const RenderOptions& opts,
                     RenderStats* stats = nullptr) const;
  // The same, for messages whose object keys must keep their order (Python dicts do).
  std::string render_ordered(const nlohmann::ordered_json& messages, const RenderOptions& opts,
                             RenderStats* stats = nullptr) const;

  const std::string& name() const { return name_; }
  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::string name_;
  std::unique_ptr<Program> program_;
};

// The ChatML template used when a model ships none.
std::string default_chatml_template();

}  // namespace strata::chat
