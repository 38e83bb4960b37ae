#!/usr/bin/env python3
"""Table of bench/kv_quant.sh's runs: DIR holds TYPE.DEPTH.ROUND.json, each the JSON of
one `strata bench model -o json` run (a list of result rows). Prints, per KV type and
depth, the median decode tokens/s over the rounds, every round's figure, the ratio to
bf16 at that depth, and the KV bytes per token of context (kv_bytes / (depth + n_gen + 1))."""
import collections
import glob
import json
import os
import statistics
import sys


def load(directory):
    runs = collections.defaultdict(list)
    kv_per_token = {}
    for f in sorted(glob.glob(os.path.join(directory, "*.json"))):
        t, d, _ = os.path.basename(f)[:-5].split(".")
        with open(f) as fh:
            rows = json.load(fh)
        for row in rows:
            if row.get("n_gen", 0) <= 0:
                continue
            runs[(t, int(d))].append(row["tokens_per_s_mean"])
            ctx = row["depth"] + row["n_gen"] + 1
            kv_per_token[(t, int(d))] = row["kv_bytes"] / ctx
    return runs, kv_per_token


def table(runs, kv_per_token):
    lines = ["| kv type | depth | decode tok/s (median) | runs | vs bf16 | KV B/token |",
             "|---|---:|---:|---|---:|---:|"]
    order = {"bf16": 0, "f16": 1, "q8_0": 2, "q4_0": 3, "f32": 4}
    for (t, d) in sorted(runs, key=lambda k: (k[1], order.get(k[0], 9), k[0])):
        v = runs[(t, d)]
        med = statistics.median(v)
        base = runs.get(("bf16", d))
        ratio = f"{med / statistics.median(base):.2f}x" if base else "-"
        lines.append(f"| {t} | {d} | {med:.2f} | {' '.join(f'{x:.2f}' for x in v)} | {ratio} "
                     f"| {kv_per_token[(t, d)]:.0f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(*load(sys.argv[1])))
