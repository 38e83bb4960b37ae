// `strata router`: a prefix-aware router over strata serve replicas (docs/ROUTER.md).
#include "router/router.h"

#include <signal.h>

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
  cmd->add_option("--replica", f->config.replicas, "replica base URL (repeatable)")->required();
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
  cmd->add_option("--host", f->http.host, "listen address");
  cmd->add_option("--port", f->http.port, "listen port (0: any)");
  cmd->callback([f] {
    f->config.policy = router::parse_policy(f->policy);
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    router::Router r(f->config);
    server::HttpServer http(f->http,
                            [&r](server::HttpRequest req, std::shared_ptr<server::Responder> out) {
                              r.handle(std::move(req), std::move(out));
                            });
    http.start();
    std::fprintf(stderr, "strata router: listening on http://%s:%u\n", f->http.host.c_str(),
                 http.port());
    int sig = 0;
    sigwait(&signals, &sig);
    http.stop_accepting();
    http.stop();
  });
}

}  // namespace strata::tools
