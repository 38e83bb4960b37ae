// The server's side of prefill/decode disaggregation (docs/DISAGGREGATION.md):
//   decode role: a KvReceiver (disagg/kv_transport.h: tcp or ucx) whose handler imports each KV
//   message on the engine
//                thread (EngineCore::import_blocks), so the next request with that prompt
//                hits the imported blocks in the prefix cache;
//   prefill role: POST /internal/kv/prefill — decide transfer vs recompute, and on
//                transfer prefill the prompt, export its full blocks on the engine
//                thread and send them to the decode replica's kv_target.
// The prefill runs as an ordinary one-token greedy request (own prefix cache included);
// its final output posts the export to the engine thread, which runs before the next
// step, so no allocation can evict the blocks in between. Encoding and sending run on
// this service's own sender thread, one message at a time.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "disagg/kv_format.h"
#include "disagg/kv_transport.h"
#include "disagg/transfer_decision.h"
#include "engine/engine_loop.h"
#include "server/metrics.h"

namespace strata::server {

enum class ServeRole { kBoth, kPrefill, kDecode };
ServeRole parse_serve_role(const std::string& text);  // throws strata::Error
const char* serve_role_name(ServeRole role);

struct DisaggConfig {
  ServeRole role = ServeRole::kBoth;
  std::string kv_listen;              // HOST:PORT of the KV receiver; empty: none
  std::string transport = "tcp";      // "tcp" or "ucx" (disagg/kv_transport.h), both ends alike
  double link_gbps = 10;              // link estimate before any send was measured
  double rate_limit_bytes_per_s = 0;  // sender pacing (0: none), the slow-link experiment
  double io_timeout_s = 30;           // each transport phase
  double import_timeout_s = 30;       // a receiver waits this long for the engine thread
};

// "HOST:PORT" (PORT 0..65535); throws strata::Error naming `what`.
std::pair<std::string, uint16_t> split_host_port(const std::string& text, const char* what);

class KvTransferService {
 public:
  // Starts the receiver (role decode or both, kv_listen set). The loop, engine and
  // metrics must outlive the service.
  KvTransferService(DisaggConfig config, EngineLoop& loop, const EngineCore& engine,
                    ServerMetrics& metrics);
  ~KvTransferService();  // stops the receiver and the sender (pending sends are answered)
  KvTransferService(const KvTransferService&) = delete;
  KvTransferService& operator=(const KvTransferService&) = delete;

  // Stops accepting KV messages (before the engine loop goes).
  void stop_receiver() { receiver_.reset(); }

  const DisaggConfig& config() const { return config_; }
  bool serves_prefill() const { return config_.role != ServeRole::kDecode; }
  // GET /internal/kv/info.
  nlohmann::json info() const;
  // Messages the receiver refused (checksum, model, layout, pool space, stalled peer).
  uint64_t import_rejections() const { return receiver_ ? receiver_->rejected() : 0; }

  // The answer of /internal/kv/prefill: HTTP status and JSON body. Runs on any thread.
  using Done = std::function<void(int status, nlohmann::json body)>;
  // Decides, and on transfer prefills `prompt`, exports and sends to `target`
  // (HOST:PORT); `done` is called once, from whichever thread finishes. `decode_held`:
  // leading blocks the decode replica said it holds (its /internal/kv/lookup); only the
  // others count as recompute time saved.
  void prefill(std::vector<int32_t> prompt, std::string salt, const std::string& target,
               int64_t decode_held, Done done);
  // Leading full blocks of `prompt` this engine's prefix cache holds, asked on the engine
  // thread; nullopt when it did not answer within `timeout_s`.
  std::optional<int64_t> held_blocks(std::vector<int32_t> prompt, std::string salt,
                                     double timeout_s);
  int32_t block_size() const { return block_size_; }

 private:
  struct Send {
    disagg::KvMessage message;
    std::string host;
    uint16_t port = 0;
    double started_s = 0, prefill_s = 0;
    disagg::TransferDecision decision;
    Done done;
  };
  std::string import_message(disagg::KvMessage message);
  void send_loop();
  void send_one(Send& s);

  DisaggConfig config_;
  EngineLoop& loop_;
  ServerMetrics& metrics_;
  int32_t block_size_;
  uint64_t block_bytes_;
  uint64_t fingerprint_;
  disagg::TransferRates rates_;
  std::unique_ptr<disagg::KvReceiver> receiver_;
  std::unique_ptr<disagg::KvSender> sender_transport_;
  std::string listen_actual_;  // HOST:PORT the receiver is bound to; empty: none

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Send> sends_;
  bool stop_ = false;
  std::thread sender_;
};

}  // namespace strata::server
