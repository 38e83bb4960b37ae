// The thread-safe front of the engine: one thread owns the EngineCore and steps it while
// other threads (the HTTP server's) submit and abort requests. Outputs are delivered
// through per-request callbacks that run on the engine thread, so they must be cheap
// (hand the output to another thread's queue; detokenize there).
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/engine_core.h"

namespace strata {

class EngineLoop {
 public:
  using Callback = std::function<void(const RequestOutput&)>;

  // `on_fatal` (optional) is called once, on the engine thread, if the engine fails in a
  // way that leaves its state unknown (see run()); every request has ended kError by then
  // and submit() refuses new ones.
  explicit EngineLoop(EngineCore& engine,
                      std::function<void(const std::string&)> on_fatal = nullptr);
  ~EngineLoop();  // aborts whatever is left and joins the thread
  EngineLoop(const EngineLoop&) = delete;
  EngineLoop& operator=(const EngineLoop&) = delete;

  // Validates synchronously (throws strata::Error naming the bad field) and queues the
  // request; `on_output` receives every output of it, the last one with a finish reason.
  RequestId submit(std::vector<int32_t> prompt, const RequestOptions& options, Callback on_output);
  // Aborts a request wherever it is (queued, prefilling or decoding); its final output
  // carries FinishReason::kAbort. Unknown or finished ids are ignored.
  void abort(RequestId id);
  void abort_all();

  // Runs `task` on the engine thread before the next step (after the outputs of the last
  // one were delivered, so a task posted from an output callback sees the engine exactly
  // as that step left it). Tasks must not block; one that throws is reported and
  // dropped. Throws strata::Error when the loop has stopped or failed.
  using Task = std::function<void(EngineCore&)>;
  void post(Task task);

  // Requests submitted and not yet finished.
  size_t in_flight() const;
  // Metrics as of the last step (safe to call from any thread).
  EngineMetrics metrics() const;
  // Blocks until nothing is in flight or `timeout_s` passes; true if idle.
  bool wait_idle(double timeout_s);
  // Why the engine failed; empty while it works.
  std::string failure() const;

 private:
  struct Pending {
    RequestId id;
    std::vector<int32_t> prompt;
    RequestOptions options;
    Callback callback;
  };
  void run();
  void fail(const std::string& what);
  static void deliver(const Callback& callback, const RequestOutput& o);

  EngineCore& engine_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::vector<Pending> submissions_;
  std::vector<RequestId> aborts_;
  std::vector<Task> tasks_;
  bool stop_ = false;
  std::string failure_;
  std::function<void(const std::string&)> on_fatal_;
  std::atomic<RequestId> next_id_{1};
  size_t in_flight_ = 0;
  EngineMetrics metrics_;
  // Engine-thread state: loop id <-> engine id, and callbacks.
  std::unordered_map<RequestId, RequestId> to_engine_;
  std::unordered_map<RequestId, std::pair<RequestId, Callback>> from_engine_;
  std::thread thread_;
};

}  // namespace strata
