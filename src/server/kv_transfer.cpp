#include "server/kv_transfer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>

#include "core/clock.h"
#include "core/error.h"

namespace strata::server {

using nlohmann::json;

ServeRole parse_serve_role(const std::string& text) {
  if (text == "both") return ServeRole::kBoth;
  if (text == "prefill") return ServeRole::kPrefill;
  if (text == "decode") return ServeRole::kDecode;
  throw Error("--role: '" + text + "' is not one of prefill, decode, both");
}

const char* serve_role_name(ServeRole role) {
  switch (role) {
    case ServeRole::kPrefill:
      return "prefill";
    case ServeRole::kDecode:
      return "decode";
    case ServeRole::kBoth:
      break;
  }
  return "both";
}

std::pair<std::string, uint16_t> split_host_port(const std::string& text, const char* what) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size() ||
      text.size() - colon - 1 > 5) {
    throw Error(std::string(what) + ": '" + text + "' is not HOST:PORT");
  }
  uint32_t port = 0;
  for (size_t i = colon + 1; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9')
      throw Error(std::string(what) + ": '" + text + "' has a bad port");
    port = port * 10 + static_cast<uint32_t>(text[i] - '0');
  }
  if (port > 65535) throw Error(std::string(what) + ": port of '" + text + "' is above 65535");
  return {text.substr(0, colon), static_cast<uint16_t>(port)};
}

namespace {

disagg::KvTransportOptions transport_options(const DisaggConfig& c) {
  disagg::KvTransportOptions o;
  o.io_timeout_s = c.io_timeout_s;
  o.rate_limit_bytes_per_s = c.rate_limit_bytes_per_s;
  return o;
}

double initial_link(const DisaggConfig& c) {
  double link = c.link_gbps * 1e9 / 8;
  if (c.rate_limit_bytes_per_s > 0 && c.rate_limit_bytes_per_s < link)
    link = c.rate_limit_bytes_per_s;
  return link;
}

}  // namespace

KvTransferService::KvTransferService(DisaggConfig config, EngineLoop& loop,
                                     const EngineCore& engine, ServerMetrics& metrics)
    : config_(std::move(config)),
      loop_(loop),
      metrics_(metrics),
      block_size_(engine.config().block_size),
      block_bytes_(engine.kv_block_bytes()),
      fingerprint_(engine.model_fingerprint()),
      rates_(initial_link(config_)) {
  if (config_.role != ServeRole::kPrefill && !config_.kv_listen.empty()) {
    auto [host, port] = split_host_port(config_.kv_listen, "--kv-listen");
    receiver_ = disagg::make_kv_receiver(
        config_.transport, host, port, transport_options(config_),
        [this](disagg::KvMessage m) { return import_message(std::move(m)); });
    listen_actual_ = host + ":" + std::to_string(receiver_->port());
    std::fprintf(stderr, "strata serve: KV receiver on %s:%u (role %s)\n", host.c_str(),
                 receiver_->port(), serve_role_name(config_.role));
  } else if (config_.role == ServeRole::kDecode) {
    throw Error("--role decode needs --kv-listen HOST:PORT");
  }
  if (config_.role != ServeRole::kDecode)
    sender_transport_ = disagg::make_kv_sender(config_.transport, transport_options(config_));
  sender_ = std::thread([this] { send_loop(); });
}

KvTransferService::~KvTransferService() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  sender_.join();
  receiver_.reset();
}

json KvTransferService::info() const {
  json j = {{"role", serve_role_name(config_.role)},
            {"kv_transport", config_.transport},
            {"block_size", block_size_},
            {"block_bytes", block_bytes_},
            {"model_fingerprint", std::to_string(fingerprint_)},
            {"link_bytes_per_s", rates_.link_bytes_per_s()},
            {"prefill_tokens_per_s", rates_.prefill_tokens_per_s()}};
  j["kv_listen"] = listen_actual_;
  return j;
}

// Receiver thread: the import itself runs on the engine thread, between steps.
std::string KvTransferService::import_message(disagg::KvMessage message) {
  auto result = std::make_shared<std::promise<EngineCore::KvImportResult>>();
  auto future = result->get_future();
  auto shared = std::make_shared<disagg::KvMessage>(std::move(message));
  try {
    loop_.post([result, shared](EngineCore& engine) {
      try {
        result->set_value(engine.import_blocks(*shared));
      } catch (...) {
        result->set_exception(std::current_exception());
      }
    });
  } catch (const Error& e) {
    throw Error(std::string("kv import: ") + e.what());
  }
  if (future.wait_for(std::chrono::duration<double>(config_.import_timeout_s)) !=
      std::future_status::ready) {
    throw Error("kv import: the engine thread did not run the import in time");
  }
  EngineCore::KvImportResult r;
  try {
    r = future.get();
  } catch (const Error& e) {
    std::fprintf(stderr, "strata serve: KV import refused: %s\n", e.what());
    throw;
  } catch (const std::exception& e) {
    throw Error(std::string("kv import: ") + e.what());
  }
  metrics_.count_kv_import(static_cast<uint64_t>(r.imported));
  return "imported " + std::to_string(r.imported) + " blocks, " + std::to_string(r.skipped) +
         " held already";
}

std::optional<int64_t> KvTransferService::held_blocks(std::vector<int32_t> prompt, std::string salt,
                                                      double timeout_s) {
  auto result = std::make_shared<std::promise<int64_t>>();
  auto future = result->get_future();
  auto shared = std::make_shared<std::pair<std::vector<int32_t>, std::string>>(std::move(prompt),
                                                                               std::move(salt));
  loop_.post([result, shared](EngineCore& engine) {
    try {
      result->set_value(engine.held_prefix_blocks(shared->first, shared->second));
    } catch (...) {
      result->set_exception(std::current_exception());
    }
  });
  if (future.wait_for(std::chrono::duration<double>(timeout_s)) != std::future_status::ready)
    return std::nullopt;
  return future.get();
}

void KvTransferService::prefill(std::vector<int32_t> prompt, std::string salt,
                                const std::string& target, int64_t decode_held, Done done) {
  auto [host, port] = split_host_port(target, "kv_target");
  const auto bs = static_cast<size_t>(block_size_);
  const auto n_blocks = static_cast<int64_t>(prompt.size() / bs);
  // The decode replica is assumed to lack every block (it skips those it holds).
  const uint64_t bytes = static_cast<uint64_t>(n_blocks) * (block_bytes_ + bs * 4 + 16);
  const uint64_t lacking_tokens =
      static_cast<uint64_t>(std::max<int64_t>(0, n_blocks - decode_held)) * bs;
  disagg::TransferDecision d =
      disagg::decide_transfer(bytes, static_cast<int64_t>(lacking_tokens),
                              rates_.link_bytes_per_s(), rates_.prefill_tokens_per_s());
  // No prefill rate yet: this prefill measures one, and the decision is made after it.
  const bool probe = d.transfer && d.recompute_s == 0;
  auto log = [n = prompt.size(), n_blocks, bytes](const disagg::TransferDecision& dd) {
    std::fprintf(stderr,
                 "strata serve: kv prefill of %zu tokens (%lld blocks, %llu bytes): %s: %s\n", n,
                 static_cast<long long>(n_blocks), static_cast<unsigned long long>(bytes),
                 dd.transfer ? "transfer" : "recompute", dd.reason.c_str());
  };
  auto answer_recompute = [](const Done& dn, const disagg::TransferDecision& dd,
                             const std::string& why) {
    dn(200, json{{"decision", "recompute"},
                 {"blocks", 0},
                 {"bytes", 0},
                 {"seconds", 0.0},
                 {"estimated_transfer_s", dd.transfer_s},
                 {"estimated_recompute_s", dd.recompute_s},
                 {"reason", why}});
  };
  if (!probe) {
    log(d);
    metrics_.count_kv_decision(d.transfer);
    if (!d.transfer) return answer_recompute(done, d, d.reason);
  }
  RequestOptions o;
  o.stop.max_tokens = 1;
  o.stop.ignore_eos = true;
  o.sampling.temperature = 0;
  o.cache_salt = salt;
  o.speculative = false;
  auto tokens = std::make_shared<std::vector<int32_t>>(prompt);
  auto shared_done = std::make_shared<Done>(std::move(done));
  const double t0 = steady_now_s();
  auto recompute = [shared_done, d, answer_recompute](const std::string& why) {
    answer_recompute(*shared_done, d, why);
  };
  auto on_output = [this, tokens, salt, host, port, d, t0, shared_done, recompute, probe, bytes,
                    lacking_tokens, log, answer_recompute](const RequestOutput& out) mutable {
    if (!out.finished()) return;
    if (out.finish == FinishReason::kError || out.finish == FinishReason::kAbort) {
      recompute("the prefill failed: " + (out.error.empty() ? "aborted" : out.error));
      return;
    }
    const double prefill_s = out.ttft_s - out.queue_s;
    // Only prefills long enough to be dominated by compute rather than step overhead.
    const int32_t computed = out.n_prompt - out.n_cached_prompt;
    if (computed >= 2 * block_size_ || rates_.prefill_tokens_per_s() <= 0)
      rates_.observe_prefill(computed, prefill_s);
    if (probe) {
      d = disagg::decide_transfer(bytes, static_cast<int64_t>(lacking_tokens),
                                  rates_.link_bytes_per_s(), rates_.prefill_tokens_per_s());
      d.reason += " (decided after this prefill measured the rate)";
      log(d);
      metrics_.count_kv_decision(d.transfer);
      if (!d.transfer) return answer_recompute(*shared_done, d, d.reason);
    }
    // Engine thread, after the step that finished the prefill: the export runs before
    // the next step, so its blocks are still cached.
    try {
      loop_.post([this, tokens, salt, host, port, d, t0, prefill_s, shared_done,
                  recompute](EngineCore& engine) {
        Send s;
        try {
          s.message = engine.export_prompt_blocks(*tokens, salt);
        } catch (const Error& e) {
          recompute(std::string("export failed: ") + e.what());
          return;
        }
        s.host = host;
        s.port = port;
        s.started_s = t0;
        s.prefill_s = prefill_s;
        s.decision = d;
        s.done = *shared_done;
        {
          std::lock_guard<std::mutex> lock(mutex_);
          sends_.push_back(std::move(s));
        }
        wake_.notify_all();
      });
    } catch (const Error& e) {
      recompute(std::string("export failed: ") + e.what());
    }
  };
  try {
    loop_.submit(std::move(prompt), o, std::move(on_output));
  } catch (const Error& e) {
    recompute(std::string("prefill refused: ") + e.what());
  }
}

void KvTransferService::send_loop() {
  for (;;) {
    Send s;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || !sends_.empty(); });
      if (sends_.empty()) return;  // stopping with nothing left
      s = std::move(sends_.front());
      sends_.pop_front();
    }
    send_one(s);
  }
}

void KvTransferService::send_one(Send& s) {
  const double t0 = steady_now_s();
  const auto n_blocks = static_cast<int64_t>(s.message.keys.size());
  json body = {{"blocks", n_blocks},
               {"prefill_seconds", s.prefill_s},
               {"estimated_transfer_s", s.decision.transfer_s},
               {"estimated_recompute_s", s.decision.recompute_s}};
  try {
    if (n_blocks == 0) throw Error("no block of the prompt was in the prefix cache");
    const std::vector<uint8_t> wire = disagg::encode_kv_message(s.message);
    s.message = {};  // the wire copy is all that is needed from here
    if (!sender_transport_) throw Error("this replica does not send KV (--role decode)");
    const std::string reply = sender_transport_->send(s.host, s.port, wire);
    const double seconds = steady_now_s() - t0;
    rates_.observe_send(wire.size(), seconds);
    metrics_.kv_transfer_seconds.observe(seconds);
    metrics_.count_kv_transfer(wire.size(), static_cast<uint64_t>(n_blocks));
    body["decision"] = "transfer";
    body["bytes"] = wire.size();
    body["seconds"] = seconds;
    body["reason"] = s.decision.reason;
    body["reply"] = reply;
    std::fprintf(stderr, "strata serve: sent %lld KV blocks (%zu bytes) in %.4f s: %s\n",
                 static_cast<long long>(n_blocks), wire.size(), seconds, reply.c_str());
  } catch (const std::exception& e) {
    metrics_.count_kv_send_failure();
    body["decision"] = "recompute";
    body["bytes"] = 0;
    body["seconds"] = steady_now_s() - t0;
    body["reason"] = std::string("send failed: ") + e.what();
    std::fprintf(stderr, "strata serve: KV send failed: %s\n", e.what());
  }
  s.done(200, std::move(body));
}

}  // namespace strata::server
