#!/usr/bin/env python3
"""JSONL workload for bench/router.sh (strata bench serve --dataset FILE.jsonl).

Documents of --doc-words plain English words (about 1 token each in the Llama SPM
vocabulary, so ~1K tokens for 1000 words), each asked --asks times with a question of
8..32 words, shuffled. With --popular-share p, a share p of all requests asks document 0
(the "one very popular document" case). Deterministic for a seed.
"""
import argparse
import json
import random

WORDS = ("time year people way day man thing woman life child world school state family "
         "student group country problem hand part place case week company system program "
         "question work government number night point home water room mother area money "
         "story fact month lot right study book eye job word business issue side kind head "
         "house service friend father power hour game line end member law car city name "
         "team minute idea kid body back parent face others level office door health person "
         "art war history party result change morning reason research girl guy moment air "
         "teacher force education foot boy age policy process music market sense nation plan "
         "college interest death experience effect use class control care field development "
         "role effort rate heart drug show leader light voice wife police mind price report "
         "decision son view relationship town road arm difference value building action model "
         "season society tax director position player record paper space ground form event").split()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=24)
    ap.add_argument("--asks", type=int, default=5, help="requests per document (uniform case)")
    ap.add_argument("--doc-words", type=int, default=1000)
    ap.add_argument("--output-len", type=int, default=16)
    ap.add_argument("--popular-share", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("out")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    docs = [" ".join(rng.choice(WORDS) for _ in range(a.doc_words)) for _ in range(a.docs)]
    total = a.docs * a.asks
    if a.popular_share > 0:
        n_pop = int(round(total * a.popular_share))
        order = [0] * n_pop + [1 + i % (a.docs - 1) for i in range(total - n_pop)]
    else:
        order = [d for d in range(a.docs) for _ in range(a.asks)]
    rng.shuffle(order)
    with open(a.out, "w") as f:
        for d in order:
            q = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 32)))
            prompt = f"Document: {docs[d]}\nQuestion: {q}?\nAnswer:"
            f.write(json.dumps({"prompt": prompt, "output_len": a.output_len}) + "\n")


if __name__ == "__main__":
    main()
