// Prefill/decode disaggregation end to end over loopback: in-process `strata serve`
// replicas with --role prefill and --role decode (its KV receiver on a free port) give
// the same greedy tokens as one --role both server, for one request and for concurrent
// ones, and the decode replica serves the prompt from the imported blocks. A slow link
// (--kv-rate-limit) turns the decision to recompute.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "disagg/kv_transport.h"
#include "http/http_client.h"
#include "server/server.h"
#include "support/tiny_models.h"

namespace strata {
namespace {

using nlohmann::json;

std::unique_ptr<server::Server> start(server::ServeRole role, double rate_limit = 0,
                                      const std::string& transport = "tcp") {
  server::ServeOptions o;
  o.model_path = testing::aidreams_gguf();
  o.compute_threads = 1;
  o.engine.kv_cache_tokens = 4096;
  o.engine.kv_type = DType::F16;
  o.http.host = "127.0.0.1";
  o.http.port = 0;
  o.shutdown_timeout_s = 5;
  o.disagg.role = role;
  if (role != server::ServeRole::kPrefill) o.disagg.kv_listen = "127.0.0.1:0";
  o.disagg.rate_limit_bytes_per_s = rate_limit;
  o.disagg.transport = transport;
  auto s = std::make_unique<server::Server>(o);
  s->start();
  s->load();
  return s;
}

json completion(const std::string& prompt) {
  return {{"prompt", prompt}, {"max_tokens", 16}, {"temperature", 0}};
}

std::string prompt_text(int i) {
  std::string p = "Once upon a time, in a small town, there lived a girl named Lily " +
                  std::to_string(i) + ". ";
  for (int k = 0; k <= i % 2; ++k) p += "She liked to play in the park with her dog and her ball. ";
  return p;
}

struct PdReplicas {
  std::unique_ptr<server::Server> both = start(server::ServeRole::kBoth);
  std::unique_ptr<server::Server> decode = start(server::ServeRole::kDecode);
  std::unique_ptr<server::Server> prefill = start(server::ServeRole::kPrefill);
  std::string kv_target() const {
    const auto info = testing::http_get(decode->port(), "/internal/kv/info").json();
    EXPECT_EQ(info["role"], "decode");
    return info["kv_listen"].get<std::string>();
  }
};

// One request the PD way: prefill replica, then the decode replica.
json pd_request(const PdReplicas& r, const std::string& target, const std::string& prompt,
                json* decision = nullptr) {
  json body = completion(prompt);
  body["kv_target"] = target;
  const auto d = testing::http_post(r.prefill->port(), "/internal/kv/prefill", body);
  EXPECT_EQ(d.status, 200) << d.body;
  if (decision) *decision = d.json();
  const auto out = testing::http_post(r.decode->port(), "/v1/completions", completion(prompt));
  EXPECT_EQ(out.status, 200) << out.body;
  return out.json();
}

TEST(PdServer, SingleRequestMatchesOneServer) {
  PdReplicas r;
  const std::string target = r.kv_target();
  const std::string prompt = prompt_text(0);
  json decision;
  const json got = pd_request(r, target, prompt, &decision);
  EXPECT_EQ(decision["decision"], "transfer") << decision.dump();
  const int blocks = decision["blocks"].get<int>();
  EXPECT_GT(blocks, 0);
  EXPECT_GT(decision["bytes"].get<int64_t>(), 0);
  EXPECT_EQ(got["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), blocks * 16)
      << got.dump();
  const json want =
      testing::http_post(r.both->port(), "/v1/completions", completion(prompt)).json();
  EXPECT_EQ(got["choices"][0]["text"], want["choices"][0]["text"]);
  // The decode replica reports the blocks it holds; told so, the prefill replica sends
  // nothing.
  const json held =
      testing::http_post(r.decode->port(), "/internal/kv/lookup", completion(prompt)).json();
  EXPECT_EQ(held["held_blocks"].get<int>(), blocks) << held.dump();
  json again = completion(prompt);
  again["kv_target"] = target;
  again["route"] = {{"decode_held_blocks", blocks}};
  const json skip = testing::http_post(r.prefill->port(), "/internal/kv/prefill", again).json();
  EXPECT_EQ(skip["decision"], "recompute") << skip.dump();
  EXPECT_EQ(testing::http_post(r.both->port(), "/internal/kv/lookup", completion(prompt))
                .json()["held_blocks"]
                .get<int>(),
            blocks);  // `both` computed it itself above
  const std::string metrics = testing::http_get(r.prefill->port(), "/metrics").body;
  EXPECT_NE(metrics.find("strata:kv_transfer_decisions_total{decision=\"transfer\"} 1"),
            std::string::npos);
  EXPECT_NE(metrics.find("strata:kv_transfer_seconds_count 1"), std::string::npos);
  const std::string dm = testing::http_get(r.decode->port(), "/metrics").body;
  EXPECT_NE(dm.find("strata:kv_import_blocks_total " + std::to_string(blocks)), std::string::npos);
}

TEST(PdServer, ConcurrentRequestsMatchOneServer) {
  PdReplicas r;
  const std::string target = r.kv_target();
  constexpr int kN = 6;
  std::vector<json> got(kN), want(kN);
  std::vector<std::thread> threads;
  for (int i = 0; i < kN; ++i) {
    threads.emplace_back([&, i] {
      got[i] = pd_request(r, target, prompt_text(i));
      want[i] =
          testing::http_post(r.both->port(), "/v1/completions", completion(prompt_text(i))).json();
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kN; ++i) {
    EXPECT_EQ(got[i]["choices"][0]["text"], want[i]["choices"][0]["text"]) << i;
    EXPECT_GT(got[i]["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 0) << i;
  }
}

TEST(PdServer, SlowLinkRecomputesAndFailuresFallBack) {
  PdReplicas r;
  const std::string target = r.kv_target();
  // 1 KB/s: shipping even one block takes far longer than prefilling it.
  auto slow = start(server::ServeRole::kPrefill, 1000);
  json body = completion(prompt_text(1));
  body["kv_target"] = target;
  const json d = testing::http_post(slow->port(), "/internal/kv/prefill", body).json();
  EXPECT_EQ(d["decision"], "recompute") << d.dump();
  // A target with no receiver: the send fails, the answer says recompute.
  body["kv_target"] = "127.0.0.1:1";
  const json f = testing::http_post(r.prefill->port(), "/internal/kv/prefill", body).json();
  EXPECT_EQ(f["decision"], "recompute") << f.dump();
  // The decode replica recomputes: the same text as one server.
  const json got =
      testing::http_post(r.decode->port(), "/v1/completions", completion(prompt_text(1))).json();
  const json want =
      testing::http_post(r.both->port(), "/v1/completions", completion(prompt_text(1))).json();
  EXPECT_EQ(got["choices"][0]["text"], want["choices"][0]["text"]);
  EXPECT_EQ(got["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 0);
  // Routes a role does not serve.
  EXPECT_EQ(testing::http_post(r.decode->port(), "/internal/kv/prefill", body).status, 404);
  body.erase("kv_target");
  EXPECT_EQ(testing::http_post(r.prefill->port(), "/internal/kv/prefill", body).status, 400);
}

TEST(PdServer, UcxTransportMatchesOneServer) {
  const auto kinds = disagg::kv_transport_kinds();
  if (std::find(kinds.begin(), kinds.end(), "ucx") == kinds.end())
    GTEST_SKIP() << "UCX transport not built";
  auto both = start(server::ServeRole::kBoth);
  auto decode = start(server::ServeRole::kDecode, 0, "ucx");
  auto prefill = start(server::ServeRole::kPrefill, 0, "ucx");
  const auto info = testing::http_get(decode->port(), "/internal/kv/info").json();
  EXPECT_EQ(info["kv_transport"], "ucx");
  json body = completion(prompt_text(2));
  body["kv_target"] = info["kv_listen"];
  const json d = testing::http_post(prefill->port(), "/internal/kv/prefill", body).json();
  EXPECT_EQ(d["decision"], "transfer") << d.dump();
  const json got =
      testing::http_post(decode->port(), "/v1/completions", completion(prompt_text(2))).json();
  const json want =
      testing::http_post(both->port(), "/v1/completions", completion(prompt_text(2))).json();
  EXPECT_EQ(got["choices"][0]["text"], want["choices"][0]["text"]);
  EXPECT_GT(got["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 0);
}

}  // namespace
}  // namespace strata
