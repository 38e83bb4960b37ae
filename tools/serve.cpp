// strata serve -m MODEL.gguf [--host H] [--port P] [--api-key KEY] [engine flags]
// An OpenAI-compatible HTTP server (docs/SERVER.md). SIGTERM or SIGINT shut it down
// gracefully: running requests get up to --shutdown-timeout seconds, then it exits 0.
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "server/server.h"
#include "tools/commands.h"
#include "tools/common.h"
#include "tools/engine_flags.h"
#include "tools/spec_flags.h"

namespace strata::tools {
namespace {

struct ServeFlags {
  EngineFlags engine;
  ServingFlags serving;
  SpecFlags spec;
  server::HttpServerConfig http;
  server::ApiConfig api;
  server::TemplateLimits template_limits;
  double shutdown_timeout_s = 30;
  std::string role = "both";
  server::DisaggConfig disagg;
};

// What ends the serving: a signal, or an engine failure that left its state unknown.
struct StopEvent {
  std::mutex mutex;
  std::condition_variable cv;
  bool loaded = false;
  int signal = 0;
  std::string engine_failure;
};

void serve(const ServeFlags& f) {
#ifdef __GLIBC__
  // Fixed allocator thresholds: glibc raises its mmap threshold to the size of the
  // largest block freed, so after one 8 MB request every later one comes from the
  // heaps, whose free tops (in the threads' arenas) malloc_trim does not return: two
  // 8 MB prompts left 81 MB resident for good, against 14 MB with these settings
  // (docs/BENCHMARKS.md).
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  mallopt(M_TRIM_THRESHOLD, 8 << 20);
#endif

  // Signals are taken synchronously by this thread (sigwait), so every other thread,
  // created below, starts with them blocked.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // Recorded by the engine thread only; written once shutdown() has joined it.
  const TraceFile trace(f.engine.trace);
  server::ServeOptions o;
  o.model_path = f.engine.model_path;
  o.load = f.engine.load_options();
  o.compute_threads = f.engine.thread_count();
  o.engine = f.serving.config(f.engine.kv_dtype(), {});
  o.head_map = f.engine.sparse;
  o.engine.tracer = trace.get();
  o.engine.context_length = f.engine.ctx;
  o.engine.spec = f.spec.config();
  o.draft_model_path = f.spec.draft_model;
  o.http = f.http;
  o.api = f.api;
  o.shutdown_timeout_s = f.shutdown_timeout_s;
  o.template_limits = f.template_limits;
  o.disagg = f.disagg;
  o.disagg.role = server::parse_serve_role(f.role);
  auto stop = std::make_shared<StopEvent>();
  o.on_engine_failure = [stop](const std::string& what) {
    {
      std::lock_guard<std::mutex> lock(stop->mutex);
      stop->engine_failure = what;
    }
    stop->cv.notify_all();
  };
  server::Server srv(o);
  srv.start();
  std::fprintf(stderr, "strata serve: listening on http://%s:%u\n", f.http.host.c_str(),
               srv.port());

  // One thread takes the signals from here on. During the load nothing has been accepted
  // that a drain could finish (generation requests get 503), so a signal then exits at
  // once instead of waiting for a load that can take minutes. After it, the first signal
  // drains; a second means "now": skip the drain.
  std::thread([signals, stop] {
    int sig = 0;
    sigwait(&signals, &sig);
    {
      std::lock_guard<std::mutex> lock(stop->mutex);
      if (!stop->loaded) {
        std::fprintf(stderr, "strata serve: %s received while loading the model; exiting\n",
                     sig == SIGINT ? "SIGINT" : "SIGTERM");
        std::_Exit(0);
      }
      stop->signal = sig;
    }
    stop->cv.notify_all();
    sigwait(&signals, &sig);
    std::fprintf(stderr, "strata serve: second signal; exiting without draining\n");
    std::_Exit(1);
  }).detach();

  const auto load_start = std::chrono::steady_clock::now();
  srv.load();
  {
    std::lock_guard<std::mutex> lock(stop->mutex);
    stop->loaded = true;
  }
  const std::chrono::duration<double> load_time = std::chrono::steady_clock::now() - load_start;
  std::fprintf(stderr, "strata serve: model %s loaded in %.2f s; ready\n",
               f.engine.model_path.c_str(), load_time.count());

  std::string failure;
  {
    std::unique_lock<std::mutex> lock(stop->mutex);
    const auto stopping = [&] { return stop->signal != 0 || !stop->engine_failure.empty(); };
    while (!stop->cv.wait_for(lock, std::chrono::seconds(2), stopping)) {
      lock.unlock();
      srv.release_memory_if_idle();
      lock.lock();
    }
    failure = stop->engine_failure;
    if (failure.empty()) {
      std::fprintf(stderr,
                   "strata serve: %s received; shutting down (up to %.1f s for running requests)\n",
                   stop->signal == SIGINT ? "SIGINT" : "SIGTERM", f.shutdown_timeout_s);
    }
  }
  srv.shutdown();
  trace.write();
  if (!failure.empty()) throw Error("the engine failed and the server stopped: " + failure);
  std::fprintf(stderr, "strata serve: stopped\n");
}

}  // namespace

void register_serve(CLI::App& app) {
  auto f = std::make_shared<ServeFlags>();
  auto* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server (see docs/SERVER.md)");
  f->engine.add(*cmd, false);
  f->engine.add_trace(*cmd);
  f->serving.add(*cmd);
  f->spec.add(*cmd);
  cmd->add_option("--host", f->http.host, "address to listen on")->capture_default_str();
  cmd->add_option("--port", f->http.port, "port to listen on (0 = any free port)")
      ->capture_default_str();
  cmd->add_option("--api-key", f->api.api_key,
                  "require 'Authorization: Bearer KEY' (all routes but /health)");
  cmd->add_option("--max-queued-requests", f->api.max_queued_requests,
                  "sequences that may wait beyond --max-seqs before requests get 429")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  cmd->add_option("--max-body-bytes", f->http.max_body_bytes, "larger request bodies get 413")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 32));
  cmd->add_option("--shutdown-timeout", f->shutdown_timeout_s,
                  "seconds running requests may finish after SIGTERM/SIGINT")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 86400.0));
  cmd->add_option("--prepare-threads", f->api.prepare.threads,
                  "threads that parse, render and tokenize requests (off the I/O threads)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  cmd->add_option("--prepare-queue", f->api.prepare.max_queued,
                  "requests that may wait for a preparation thread before 429")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{1} << 16));
  cmd->add_option("--prepare-timeout", f->api.prepare.queue_timeout_s,
                  "seconds a request may wait for a preparation thread before 503")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 3600.0));
  cmd->add_option("--served-model-name", f->api.served_model_name,
                  "the model name clients use (default: the model file's name without extension)");
  cmd->add_option("--template-deadline", f->template_limits.deadline_s,
                  "seconds one chat-template render may take before 400")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 3600.0));
  cmd->add_option("--template-max-work", f->template_limits.max_work_units,
                  "work units one chat-template render may spend (docs/TEMPLATE_SANDBOX.md)")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1000}, uint64_t{1} << 40));
  cmd->add_option("--template-max-memory", f->template_limits.max_value_bytes,
                  "bytes of values one chat-template render may hold")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1} << 16, uint64_t{1} << 36));
  cmd->add_option("--io-threads", f->http.io_threads, "HTTP I/O threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  // Prefill/decode disaggregation (docs/DISAGGREGATION.md).
  cmd->add_option("--role", f->role,
                  "prefill, decode or both: which side of disaggregation this replica takes")
      ->capture_default_str()
      ->check(CLI::IsMember({"prefill", "decode", "both"}));
  cmd->add_option("--kv-listen", f->disagg.kv_listen,
                  "HOST:PORT of the KV receiver (decode/both): imports KV blocks sent by prefill "
                  "replicas (port 0: any; see GET /internal/kv/info)");
  cmd->add_option("--kv-transport", f->disagg.transport,
                  "KV transport of the receiver and the sends: tcp, or ucx where built (both "
                  "replicas alike; --kv-rate-limit is tcp only)")
      ->capture_default_str()
      ->check(CLI::IsMember({"tcp", "ucx"}));
  cmd->add_option("--kv-link-gbps", f->disagg.link_gbps,
                  "link bandwidth estimate (Gbit/s) for transfer-vs-recompute until sends are "
                  "measured")
      ->capture_default_str()
      ->check(CLI::Range(1e-6, 1e6));
  cmd->add_option("--kv-rate-limit", f->disagg.rate_limit_bytes_per_s,
                  "cap KV sends at BYTES_PER_S (0: none), to emulate a slow link")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e12));
  cmd->add_option("--kv-timeout", f->disagg.io_timeout_s,
                  "seconds each KV transport phase (connect, read, write) may take")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 3600.0));
  cmd->callback([f] { serve(*f); });
}

}  // namespace strata::tools
