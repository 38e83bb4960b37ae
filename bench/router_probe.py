#!/usr/bin/env python3
"""Helpers of bench/router.sh.

  sample ROUTER_URL OUT.jsonl        poll the router's per-replica in-flight every 50 ms
                                     until killed (one JSON line per sample)
  wait METRICS_URL NAME VALUE SECS   poll until the sample line NAME equals VALUE; prints
                                     the seconds it took (or "timeout")
  summary NAME RESULT.json ROUTER_URL SAMPLES.jsonl REPLICA_URL...
                                     one JSON line: throughput, TTFT, failures, router and
                                     replica prefix-hit shares, load balance
"""
import json
import math
import sys
import time
import urllib.request


def get(url, timeout=2):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def samples(text, name):
    """{labels or '': value} of the sample lines of metric NAME."""
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.startswith(name):
            continue
        head, _, value = line.rpartition(" ")
        rest = head[len(name):]
        if rest and not rest.startswith("{"):
            continue
        out[rest] = float(value)
    return out


def cmd_sample(router, out):
    with open(out, "w") as f:
        while True:
            try:
                m = get(router + "/metrics")
                f.write(json.dumps({"t": time.time(),
                                    "in_flight": samples(m, "strata_router_in_flight"),
                                    "up": samples(m, "strata_router_replica_up")}) + "\n")
                f.flush()
            except Exception:
                pass
            time.sleep(0.05)


def cmd_wait(url, name, value, secs):
    t0 = time.time()
    while time.time() - t0 < float(secs):
        try:
            v = samples(get(url), name)
            if v and all(x == float(value) for x in v.values()):
                print(f"{time.time() - t0:.2f}")
                return
        except Exception:
            pass
        time.sleep(0.05)
    print("timeout")


def cmd_summary(name, result, router, samples_path, replicas):
    s = json.load(open(result))["summary"]
    m = get(router + "/metrics")
    routed = samples(m, "strata_router_routed_total")
    q = h = 0.0
    for r in replicas:
        try:
            rm = get(r + "/metrics")
        except Exception:  # a replica stopped by the fault runs
            continue
        q += sum(samples(rm, "strata:prefix_cache_queries_total").values())
        h += sum(samples(rm, "strata:prefix_cache_hits_total").values())
    # In-flight balance over the samples with at least one request per replica: the
    # busiest replica over the mean (median and p95), and how often the busiest exceeded
    # 1.25 x mean + 1 (the CHWBL bound holds at each assignment; completions between an
    # assignment and a sample can move the mean).
    ratios, over = [], 0
    for line in open(samples_path):
        loads = [v for k, v in json.loads(line)["in_flight"].items()]
        if len(loads) < 2 or sum(loads) < len(loads):
            continue
        mean = sum(loads) / len(loads)
        ratios.append(max(loads) / mean)
        over += max(loads) > 1.25 * mean + 1
    ratios.sort()
    pct = lambda p: round(ratios[min(len(ratios) - 1, int(p * len(ratios)))], 2) if ratios else None
    n = len(ratios)
    one = lambda k: samples(m, k).get("", float("nan"))
    total_routed = sum(routed.values()) or 1
    print(json.dumps({
        "run": name,
        "completed": s["completed"], "failed": s["failed"],
        "output_tok_s": round(s["output_throughput"], 1),
        "req_s": round(s["request_throughput"], 3),
        "ttft_p50_ms": round(s["ttft_ms"]["median"], 1) if s["ttft_ms"] else None,
        "ttft_p99_ms": round(s["ttft_ms"]["p99"], 1) if s["ttft_ms"] else None,
        "router_prefix_hit_share": round(one("strata_router_prefix_hit_share"), 3),
        "replica_prefix_token_hit_share": round(h / q, 3) if q else None,
        "busiest_routed_share": round(max(routed.values()) / total_routed, 3),
        "busiest_over_mean_p50": pct(0.5), "busiest_over_mean_p95": pct(0.95),
        "samples_over_1.25mean+1": over, "samples": n,
        "retries": one("strata_router_retries_total"),
        "stream_errors": one("strata_router_stream_errors_total"),
        "unrouted": one("strata_router_unrouted_total"),
        "recommended_replicas": one("strata_router_recommended_replicas"),
    }))


if __name__ == "__main__":
    c, args = sys.argv[1], sys.argv[2:]
    {"sample": lambda: cmd_sample(*args), "wait": lambda: cmd_wait(*args),
     "summary": lambda: cmd_summary(args[0], args[1], args[2], args[3], args[4:])}[c]()
