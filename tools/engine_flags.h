// Flags of the serving engine (batch, serve and the benchmarks share them).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "core/error.h"
#include "engine/engine_core.h"

namespace strata::tools {

struct ServingFlags {
  int32_t max_seqs = 64;
  int64_t max_batch_tokens = 2048;
  int64_t prefill_chunk = 512;
  int64_t kv_cache_tokens = 0;
  uint64_t kv_cache_mem = 0;
  std::string prefix_cache = "on";
  std::string kv_prefault = "first";
  std::string policy = "fcfs";

  void add(CLI::App& cmd) {
    cmd.add_option("--max-seqs", max_seqs, "running sequences at most")
        ->capture_default_str()
        ->check(CLI::Range(1, 1 << 16));
    cmd.add_option("--max-batch-tokens", max_batch_tokens, "tokens per engine step at most")
        ->capture_default_str()
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
    cmd.add_option("--prefill-chunk", prefill_chunk,
                   "prompt tokens per request per step (0 = no chunking)")
        ->capture_default_str()
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
    cmd.add_option("--kv-cache-tokens", kv_cache_tokens, "KV pool size in tokens (0 = from memory)")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 36));
    cmd.add_option("--kv-cache-mem", kv_cache_mem,
                   "KV pool size in bytes (when --kv-cache-tokens is unset)");
    cmd.add_option("--prefix-cache", prefix_cache, "automatic prefix caching: on or off")
        ->capture_default_str()
        ->check(CLI::IsMember({"on", "off"}));
    cmd.add_option("--kv-prefault", kv_prefault,
                   "KV pool memory backed at start-up: first (the pages a step's batch lands on "
                   "first), all (the whole pool), or off (as requests first use it)")
        ->capture_default_str()
        ->check(CLI::IsMember({"first", "all", "off"}));
    cmd.add_option("--policy", policy, "scheduling policy: fcfs or priority")
        ->capture_default_str()
        ->check(CLI::IsMember({"fcfs", "priority"}));
  }

  EngineConfig config(DType kv_type, std::vector<int32_t> eog,
                      const HeadModes& head_modes = {}) const {
    EngineConfig c;
    c.head_modes = head_modes;
    c.kv_cache_tokens = kv_cache_tokens;
    c.kv_cache_mem = kv_cache_mem;
    c.kv_type = kv_type;
    if (prefix_cache != "on" && prefix_cache != "off")
      throw Error("--prefix-cache: expected on or off");
    c.prefix_cache = prefix_cache == "on";
    if (kv_prefault == "first") {
      c.kv_prefault = KvPrefault::kFirstBatch;
    } else if (kv_prefault == "all") {
      c.kv_prefault = KvPrefault::kAll;
    } else if (kv_prefault == "off") {
      c.kv_prefault = KvPrefault::kNone;
    } else {
      throw Error("--kv-prefault: expected first, all or off");
    }
    c.scheduler.max_seqs = max_seqs;
    c.scheduler.max_batch_tokens = max_batch_tokens;
    c.scheduler.prefill_chunk = prefill_chunk;
    if (policy != "fcfs" && policy != "priority")
      throw Error("--policy: expected fcfs or priority");
    c.scheduler.policy = policy == "fcfs" ? SchedulePolicy::kFcfs : SchedulePolicy::kPriority;
    c.eog_tokens = std::move(eog);
    return c;
  }
};

}  // namespace strata::tools
