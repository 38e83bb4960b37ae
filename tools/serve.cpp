// strata serve -m MODEL.gguf [--host H] [--port P] [--api-key KEY] [engine flags]
// An OpenAI-compatible HTTP server (docs/SERVER.md). SIGTERM or SIGINT shut it down
// gracefully: running requests get up to --shutdown-timeout seconds, then it exits 0.
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "server/server.h"
#include "tools/commands.h"
#include "tools/common.h"
#include "tools/engine_flags.h"

namespace strata::tools {
namespace {

struct ServeFlags {
  EngineFlags engine;
  ServingFlags serving;
  server::HttpServerConfig http;
  server::ApiConfig api;
  double shutdown_timeout_s = 30;
};

void serve(const ServeFlags& f) {
  if (f.http.io_threads < 1) throw Error("--io-threads: must be at least 1");
  if (f.api.max_queued_requests < 0) throw Error("--max-queued-requests: must be >= 0");
  if (f.http.max_body_bytes < 1) throw Error("--max-body-bytes: must be at least 1");
  if (!(f.shutdown_timeout_s >= 0)) throw Error("--shutdown-timeout: must be >= 0");
  if (f.engine.ctx < 0) throw Error("-c/--ctx: must be >= 0");

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
  o.http = f.http;
  o.api = f.api;
  o.shutdown_timeout_s = f.shutdown_timeout_s;
  server::Server srv(o);
  srv.start();
  std::fprintf(stderr, "strata serve: listening on http://%s:%u\n", f.http.host.c_str(),
               srv.port());
  srv.load();
  std::fprintf(stderr, "strata serve: model %s loaded; ready\n", f.engine.model_path.c_str());

  int sig = 0;
  sigwait(&signals, &sig);
  std::fprintf(stderr,
               "strata serve: %s received; shutting down (up to %.1f s for running requests)\n",
               sig == SIGINT ? "SIGINT" : "SIGTERM", f.shutdown_timeout_s);
  // A second signal means "now": skip the drain.
  std::thread([signals] {
    int again = 0;
    sigwait(&signals, &again);
    std::fprintf(stderr, "strata serve: second signal; exiting without draining\n");
    std::_Exit(1);
  }).detach();
  srv.shutdown();
  std::fprintf(stderr, "strata serve: stopped\n");
  trace.write();
}

}  // namespace

void register_serve(CLI::App& app) {
  auto f = std::make_shared<ServeFlags>();
  auto* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server (see docs/SERVER.md)");
  f->engine.add(*cmd, false);
  f->engine.add_trace(*cmd);
  f->serving.add(*cmd);
  cmd->add_option("--host", f->http.host, "address to listen on")->capture_default_str();
  cmd->add_option("--port", f->http.port, "port to listen on (0 = any free port)")
      ->capture_default_str();
  cmd->add_option("--api-key", f->api.api_key,
                  "require 'Authorization: Bearer KEY' (all routes but /health)");
  cmd->add_option("--max-queued-requests", f->api.max_queued_requests,
                  "sequences that may wait beyond --max-seqs before requests get 429")
      ->capture_default_str();
  cmd->add_option("--max-body-bytes", f->http.max_body_bytes, "larger request bodies get 413")
      ->capture_default_str();
  cmd->add_option("--shutdown-timeout", f->shutdown_timeout_s,
                  "seconds running requests may finish after SIGTERM/SIGINT")
      ->capture_default_str();
  cmd->add_option("--served-model-name", f->api.served_model_name,
                  "the model name clients use (default: the model file's name without extension)");
  cmd->add_option("--io-threads", f->http.io_threads, "HTTP I/O threads")->capture_default_str();
  cmd->callback([f] { serve(*f); });
}

}  // namespace strata::tools
