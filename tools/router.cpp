// `strata router`: a prefix-aware router over strata serve replicas (docs/ROUTER.md).
#include "router/router.h"

#include <signal.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <thread>

#include "server/http_server.h"
#include "tools/commands.h"

namespace strata::tools {

void register_router(CLI::App& app) {
  auto* cmd = app.add_subcommand("router", "Route OpenAI requests over strata serve replicas");
  struct Flags {
    router::RouterConfig config;
    std::string policy = "prefix";
    server::HttpServerConfig http;
  };
  auto f = std::make_shared<Flags>();
  cmd->add_option("--replica", f->config.replicas, "replica base URL (repeatable)");
  cmd->add_option("--replica-file", f->config.replica_file,
                  "more replicas, one URL per line (# comments); re-read on SIGHUP");
  cmd->add_option("--prefill-replica", f->config.prefill_replicas,
                  "PD: prefill replica base URL (repeatable); it sends each prompt's KV to the "
                  "decode replica chosen from --replica (docs/DISAGGREGATION.md)");
  cmd->add_option("--policy", f->policy, "round-robin | least-load | prefix");
  cmd->add_option("--load-factor", f->config.load_factor,
                  "CHWBL bound c: a replica takes a key while load <= c x mean (inf: none)");
  cmd->add_option("--vnodes", f->config.vnodes, "ring points per replica");
  cmd->add_option("-m,--model", f->config.prefix.model_path,
                  "GGUF for the tokenizer and chat template of prefix keys (weights unread)");
  cmd->add_option("--block-size", f->config.prefix.block_size, "the replicas' KV block size");
  cmd->add_option("--prefix-blocks", f->config.prefix.prefix_blocks,
                  "leading full blocks that form the prefix key");
  cmd->add_option("--max-attempts", f->config.max_attempts, "replicas tried per request");
  cmd->add_option("--eject-after", f->config.eject_after, "consecutive failures that eject");
  cmd->add_option("--cooldown", f->config.cooldown_s, "seconds before an ejected one is probed");
  cmd->add_option("--session-header", f->config.session_header,
                  "header that pins a session to a replica (\"\": no sticky sessions)")
      ->capture_default_str();
  cmd->add_option("--max-sessions", f->config.max_sessions, "sticky sessions kept (LRU beyond)")
      ->capture_default_str();
  cmd->add_option("--max-connections", f->config.max_connections,
                  "relay workers: requests relayed at once")
      ->capture_default_str();
  cmd->add_option("--max-queue", f->config.max_queue,
                  "requests waiting for a worker; beyond: 503 queue_full")
      ->capture_default_str();
  cmd->add_option("--scale-window", f->config.capacity.window_s,
                  "seconds the demand of strata_router_recommended_replicas is averaged over")
      ->capture_default_str();
  cmd->add_option("--replica-capacity", f->config.capacity.default_capacity,
                  "sequences per replica assumed until one is seen saturated (0: learn)")
      ->capture_default_str();
  cmd->add_option("--host", f->http.host, "listen address");
  cmd->add_option("--port", f->http.port, "listen port (0: any)");
  cmd->callback([f] {
    f->config.policy = router::parse_policy(f->policy);
    std::string& header = f->config.session_header;
    std::transform(header.begin(), header.end(), header.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    // Signals are taken synchronously by sigwait below (no handler runs): every thread
    // started from here on inherits the mask.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    router::Router r(f->config);
    server::HttpServer http(f->http,
                            [&r](server::HttpRequest req, std::shared_ptr<server::Responder> out) {
                              r.handle(std::move(req), std::move(out));
                            });
    http.start();
    std::fprintf(stderr, "strata router: listening on http://%s:%u\n", f->http.host.c_str(),
                 http.port());
    for (;;) {
      int sig = 0;
      sigwait(&signals, &sig);
      if (sig != SIGHUP) break;
      if (f->config.replica_file.empty()) {
        std::fprintf(stderr, "strata router: SIGHUP ignored (no --replica-file)\n");
        continue;
      }
      try {
        r.reload();
        std::fprintf(stderr, "strata router: reloaded %s\n", f->config.replica_file.c_str());
      } catch (const std::exception& e) {
        std::fprintf(stderr, "strata router: reload failed: %s\n", e.what());
      }
    }
    http.stop_accepting();
    http.stop();
  });
}

}  // namespace strata::tools
