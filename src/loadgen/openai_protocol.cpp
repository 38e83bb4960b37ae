#include "loadgen/openai_protocol.h"

#include <algorithm>

namespace strata::loadgen {

using nlohmann::json;

json request_body(const Prompt& p, const RequestOptions& o) {
  json body = json::object();
  if (!o.model.empty()) body["model"] = o.model;
  if (o.chat) {
    body["messages"] = json::array({{{"role", "user"}, {"content", p.text}}});
    body["max_completion_tokens"] = p.output_len;
  } else {
    if (o.token_ids) {
      body["prompt"] = p.ids;
    } else {
      body["prompt"] = p.text;
    }
    body["max_tokens"] = p.output_len;
  }
  body["temperature"] = o.temperature;
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  if (o.ignore_eos) {
    body["ignore_eos"] = true;
    body["min_tokens"] = p.output_len;
  }
  for (const auto& [k, v] : o.extra.items()) body[k] = v;
  return body;
}

StreamRecorder::StreamRecorder(bool chat, double start_s, int64_t prompt_tokens)
    : chat_(chat), start_s_(start_s), dataset_prompt_tokens_(prompt_tokens) {}

void StreamRecorder::fail(std::string message) {
  if (error_.empty()) error_ = std::move(message);
}

void StreamRecorder::on_head(int status) {
  status_ = status;
}

void StreamRecorder::on_data(std::string_view bytes, double now_s) {
  if (status_ != 200) {
    constexpr size_t kMaxErrorBody = 4096;
    error_body_.append(
        bytes.substr(0, kMaxErrorBody - std::min(kMaxErrorBody, error_body_.size())));
    return;
  }
  for (const std::string& event : sse_.feed(bytes)) on_event(event, now_s);
}

void StreamRecorder::on_event(const std::string& data, double now_s) {
  if (!error_.empty()) return;
  if (data == "[DONE]") {
    done_ = true;
    return;
  }
  if (done_) return fail("data after [DONE]");
  json j;
  try {
    j = json::parse(data);
  } catch (const json::exception&) {
    return fail("a stream chunk is not JSON: " + data.substr(0, 200));
  }
  if (!j.is_object()) return fail("a stream chunk is not a JSON object: " + data.substr(0, 200));
  if (j.contains("error")) {
    const json& e = j["error"];
    std::string message = e.is_object() && e.contains("message") && e["message"].is_string()
                              ? e["message"].get<std::string>()
                              : e.dump();
    return fail("error event in the stream: " + message);
  }
  if (j.contains("usage") && j["usage"].is_object()) {
    const json& u = j["usage"];
    if (u.contains("completion_tokens") && u["completion_tokens"].is_number_integer())
      usage_completion_ = u["completion_tokens"].get<int64_t>();
    if (u.contains("prompt_tokens") && u["prompt_tokens"].is_number_integer())
      usage_prompt_ = u["prompt_tokens"].get<int64_t>();
  }
  if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty()) return;
  const json& c = j["choices"][0];
  const json* text = nullptr;
  if (chat_) {
    if (c.contains("delta") && c["delta"].is_object() && c["delta"].contains("content"))
      text = &c["delta"]["content"];
  } else if (c.contains("text")) {
    text = &c["text"];
  }
  if (!text || !text->is_string() || text->get_ref<const std::string&>().empty()) return;
  if (first_s_ < 0) {
    first_s_ = now_s;
  } else {
    itl_s_.push_back(now_s - last_s_);
  }
  last_s_ = now_s;
  ++chunks_;
}

RequestRecord StreamRecorder::finish(const std::string& transport_error) {
  RequestRecord r;
  if (status_ != 200 && status_ != 0) {
    std::string message = error_body_;
    try {
      const json j = json::parse(error_body_);
      if (j.contains("error") && j["error"].is_object() && j["error"].contains("message"))
        message = j["error"]["message"].get<std::string>();
    } catch (const json::exception&) {
    }
    fail("HTTP " + std::to_string(status_) + ": " + message);
  }
  if (!transport_error.empty()) {
    fail(status_ == 0 ? "no response: " + transport_error : "the stream broke: " + transport_error);
  }
  if (error_.empty() && !done_) fail("the stream ended without data: [DONE]");
  if (error_.empty() && sse_.pending()) fail("the stream ended inside an event");
  if (error_.empty() && chunks_ == 0) fail("the stream carried no generated text");
  r.error = error_;
  r.prompt_tokens = usage_prompt_ >= 0 ? usage_prompt_ : dataset_prompt_tokens_;
  r.output_tokens = usage_completion_ >= 0 ? usage_completion_ : chunks_;
  if (first_s_ >= 0) {
    r.ttft_s = first_s_ - start_s_;
    r.e2el_s = last_s_ - start_s_;
  }
  r.itl_s = std::move(itl_s_);
  return r;
}

}  // namespace strata::loadgen
