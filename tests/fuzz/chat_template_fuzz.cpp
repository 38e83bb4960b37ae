// libFuzzer target for the chat template interpreter: parses random template text and
// renders it with message data derived from the same input. Any exception other than
// strata::Error, any crash, sanitizer report or leak is a bug.
//
// Input layout: template text, then optionally a NUL byte followed by bytes that steer the
// generated messages and variables. The shared templates (../shared/templates/*.jinja)
// make a good seed corpus.
//
// Build (clang): clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -Isrc \
//   tests/fuzz/chat_template_fuzz.cpp src/chat_template/*.cpp -o chat_template_fuzz
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "chat_template/chat_template.h"
#include "core/error.h"

namespace {

// Reads bytes of the steering section; returns zeros once it is exhausted.
class ByteReader {
 public:
  explicit ByteReader(std::string_view bytes) : bytes_(bytes) {}
  uint8_t byte() { return pos_ < bytes_.size() ? static_cast<uint8_t>(bytes_[pos_++]) : 0; }
  std::string text() {
    size_t n = byte() % 24;
    std::string_view s = bytes_.substr(std::min(pos_, bytes_.size()), n);
    pos_ += s.size();
    return std::string(s);  // may be invalid UTF-8 on purpose
  }
  bool done() const { return pos_ >= bytes_.size(); }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

nlohmann::ordered_json make_value(ByteReader& in, int depth) {
  switch (in.byte() % (depth > 3 ? 5 : 8)) {
    case 0:
      return nullptr;
    case 1:
      return (in.byte() & 1) != 0;
    case 2:
      return static_cast<int64_t>(static_cast<int8_t>(in.byte())) * (in.byte() % 2 ? 1 : 1000003);
    case 3:
      return static_cast<double>(static_cast<int8_t>(in.byte())) / 4.0;
    case 4:
      return in.text();
    case 5: {
      auto arr = nlohmann::ordered_json::array();
      for (int n = in.byte() % 4; n > 0; --n) arr.push_back(make_value(in, depth + 1));
      return arr;
    }
    default: {
      static const char* const kKeys[] = {"type",     "text", "name",  "arguments",
                                          "function", "id",   "items", "content"};
      auto obj = nlohmann::ordered_json::object();
      for (int n = in.byte() % 4; n > 0; --n) obj[kKeys[in.byte() % 8]] = make_value(in, depth + 1);
      return obj;
    }
  }
}

nlohmann::ordered_json make_messages(ByteReader& in) {
  static const char* const kRoles[] = {"system", "user",      "assistant",
                                       "tool",   "developer", "ipython"};
  auto messages = nlohmann::ordered_json::array();
  if (in.done()) {
    messages.push_back({{"role", "system"}, {"content", "You are helpful."}});
    messages.push_back({{"role", "user"}, {"content", "Hello"}});
    messages.push_back({{"role", "assistant"}, {"content", "Hi!"}});
    messages.push_back({{"role", "user"}, {"content", "R\xc3\xa9sum\xc3\xa9\n\ttail"}});
    return messages;
  }
  for (int n = in.byte() % 6; n > 0; --n) {
    nlohmann::ordered_json m = {{"role", kRoles[in.byte() % 6]}};
    uint8_t shape = in.byte();
    if (shape % 3 == 0) {
      m["content"] = in.text();
    } else {
      m["content"] = make_value(in, 0);
    }
    if (shape & 0x10) {
      m["tool_calls"] = nlohmann::ordered_json::array(
          {{{"id", in.text()},
            {"type", "function"},
            {"function", {{"name", in.text()}, {"arguments", make_value(in, 1)}}}}});
    }
    if (shape & 0x20) m["reasoning_content"] = in.text();
    messages.push_back(std::move(m));
  }
  return messages;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  size_t split = input.find('\0');
  std::string_view source = input.substr(0, split);
  ByteReader steer(split == std::string_view::npos ? std::string_view() : input.substr(split + 1));

  strata::chat::RenderOptions opts;
  opts.max_loop_iterations = 20'000;
  opts.max_recursion_depth = 64;
  opts.max_output_bytes = 1 << 20;
  opts.now = 1768478400;
  opts.bos_token = "<s>";
  opts.eos_token = "</s>";
  nlohmann::ordered_json messages = make_messages(steer);
  opts.add_generation_prompt = (steer.byte() & 1) != 0;
  if (!steer.done()) {
    opts.extra_ordered["tools"] = make_value(steer, 0);
    opts.extra_ordered["enable_thinking"] = (steer.byte() & 1) != 0;
  }
  try {
    strata::chat::ChatTemplate tmpl{std::string(source), "fuzz.jinja"};
    (void)tmpl.render_ordered(messages, opts);
  } catch (const strata::Error&) {
    // Rejected templates and failed renders are expected outcomes.
  }
  return 0;
}
