"""Benchmark 1: our fill_mask vs transformers.pipeline("fill-mask"), same model, same input.

    .venv/bin/python -m bench.fill_mask [--model minilm-mlm] [--runs 200] [--device auto]

Both use the same loaded model object and tokenizer, on the core's device and dtype (auto:
CUDA, then MPS, then CPU; float16 on a GPU). Runs alternate (ours, ours without oneDNN,
pipeline, products, ours, ...) so that drift in machine load hits all alike; the figures are
medians.
"Ours without oneDNN" is the same call with ``use_onednn(False)`` (the body's linear layers
on MKL, as the pipeline runs them): its share of the difference. On CUDA a side more, "no CUDA
graphs" (``use_cuda_graphs(False)``: transformers' forward instead of the body's CUDA graph,
models/runtime/cuda_graphs.py). A last side, "products",
replays our call's weight products alone (``bench_common.record_products``: the same ops on
the same weights and shapes, nothing else): its ratio to the pipeline is the floor of ours
with these float32 products (the FLOOR line). Target: ours <= 0.5 x pipeline time.
Measures ``--repeat`` times (default 3) and reports the median and range of each ratio. Prints the machine (CPU model, vendor and flags), versions, which path the core
chose for its linear layers and why, which forward fill-mask takes and the layout of its
vocabulary product (both depend on the device and the CPU's vendor), the ratios per input
and a SUMMARY line each.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from bench.bench_common import (machine_line, onednn_choice, record_products, spread, spread_text, sync,
                                without_cuda_graphs, without_onednn)
from models import get_spec

TARGET = 0.5  # our time over the pipeline's, in every measurement
INPUTS = {
    "one mask": "The cat sat on the [MASK] and looked out of the window at the birds.",
    "three masks": "She opened the [MASK], walked into the [MASK] and sat down at the [MASK].",
}


def measure(key: str, runs: int, loaded, pipe) -> list[dict]:
    """One measurement of every input: medians of ``runs`` alternating calls per side."""
    import torch

    from models import fill_mask

    results = []
    for name, text in INPUTS.items():
        pipe_text = text.replace("[MASK]", loaded.tokenizer.mask_token)
        # Same answers first: the benchmark compares equal work.
        ours = fill_mask(key, text, top_k=5)
        ref = pipe(pipe_text, top_k=5)
        ref = [ref] if isinstance(ref[0], dict) else ref
        for mask, expected in zip(ours.masks, ref):
            if loaded.dtype == torch.float32:
                assert [p.token_id for p in mask.predictions] == [e["token"] for e in expected]
            else:  # in half precision near-ties may swap: the best scores agree
                assert abs(mask.predictions[0].score - expected[0]["score"]) <= 2e-3, (mask, expected)
        sides = {
            "ours": lambda: fill_mask(key, text, top_k=5),
            "no oneDNN": lambda: without_onednn(lambda: fill_mask(key, text, top_k=5)),
            "pipeline": lambda: pipe(pipe_text, top_k=5),
        }
        if loaded.device.type == "cuda":  # transformers' forward, not the body's CUDA graph
            sides["no CUDA graphs"] = lambda: without_cuda_graphs(lambda: fill_mask(key, text, top_k=5))
        for _ in range(10):  # warm-up
            for run in sides.values():
                run()
        # Our call's weight products alone (bench_common.record_products): its float32 floor.
        _, products = record_products(lambda: fill_mask(key, text, top_k=5), loaded.model)
        prepared = products.prepared()
        sides["products"] = lambda: products.run(prepared)
        for _ in range(10):
            sides["products"]()
        times = {side: [] for side in sides}
        for _ in range(runs):
            for side, run in sides.items():
                start = time.perf_counter()
                run()
                sync(loaded.device)
                times[side].append(time.perf_counter() - start)
        ms = {side: statistics.median(times[side]) * 1e3 for side in sides}
        ours_ms, plain_ms, pipe_ms, products_ms = (ms[side] for side in ("ours", "no oneDNN", "pipeline", "products"))
        results.append({"input": name, "ours_ms": ours_ms, "no_onednn_ms": plain_ms, "pipeline_ms": pipe_ms,
                        "ratio": ours_ms / pipe_ms, "ratio_no_onednn": plain_ms / pipe_ms,
                        "products_ms": products_ms, "products_ratio": products_ms / pipe_ms,
                        "products": len(products)})
        if "no CUDA graphs" in ms:
            results[-1].update(no_cuda_graphs_ms=ms["no CUDA graphs"], ratio_no_cuda_graphs=ms["no CUDA graphs"] / pipe_ms)
    return results


def run(key: str | None = None, runs: int = 200, repeat: int = 3, device: str = "auto", quiet: bool = False) -> dict:
    """``repeat`` measurements in this process; per input the median ratio and its spread."""
    from transformers import pipeline

    from models import load_model, set_device
    from models.registry.catalogue import default_model_key
    from models.mlm.fill_mask import forward_path

    set_device(device)
    key = key or default_model_key()
    loaded = load_model(get_spec(key), head="mlm")
    pipe = pipeline("fill-mask", model=loaded.model, tokenizer=loaded.tokenizer, device=loaded.device)
    onednn_on, why = onednn_choice(loaded.device)
    say = (lambda *a: None) if quiet else print
    say(machine_line(loaded.device))
    path = forward_path(loaded)
    say(f"model: {key} ({loaded.dtype}), runs per side: {runs}, top_k 5, {repeat} measurements\n{why}\n{path}\n")
    say(f"{'input':<12} {'ours ms':>9} {'no oneDNN':>10} {'pipeline ms':>12} {'ratio':>7}"
        f" {'no oneDNN':>10} {'products ms':>12} {'ratio':>7}  target <= {TARGET:.2f}")
    measurements = []
    for _ in range(repeat):
        measurements.append(measure(key, runs, loaded, pipe))
        for row in measurements[-1]:
            say(f"{row['input']:<12} {row['ours_ms']:>9.2f} {row['no_onednn_ms']:>10.2f} "
                f"{row['pipeline_ms']:>12.2f} {row['ratio']:>7.2f} "
                f"{row['ratio_no_onednn']:>10.2f} {row['products_ms']:>12.2f} "
                f"{row['products_ratio']:>7.2f}")
    report = {"model": key, "device": loaded.device.type, "dtype": str(loaded.dtype).removeprefix("torch."),
              "runs_per_side": runs, "onednn": onednn_on, "onednn_why": why, "path": path, "inputs": {}}
    for i, name in enumerate(INPUTS):
        rows = [m[i] for m in measurements]
        report["inputs"][name] = {field: spread([r[field] for r in rows])
                                  for field in ("ours_ms", "no_onednn_ms", "pipeline_ms", "ratio",
                                                "ratio_no_onednn", "products_ms", "products_ratio", "no_cuda_graphs_ms", "ratio_no_cuda_graphs")
                                  if field in rows[0]}
        ratio = report["inputs"][name]["ratio"]
        say(f"SUMMARY fill-mask {name} time vs pipeline: {spread_text([r['ratio'] for r in rows])}x "
            f"({loaded.device.type} {report['dtype']}, ours {report['inputs'][name]['ours_ms']['median']:.2f} ms) "
            f"(target <= {TARGET}x): {'pass' if ratio['max'] <= TARGET else 'FAIL'}"
            + (f"; transformers' forward (no CUDA graphs) {spread_text([r['ratio_no_cuda_graphs'] for r in rows])}x"
               if "ratio_no_cuda_graphs" in rows[0] else ""))
        say(f"FLOOR fill-mask {name}: our call's {rows[-1]['products']} weight products alone (same weights and "
            f"shapes, replayed in the alternation) {spread_text([r['products_ratio'] for r in rows])}x the pipeline's "
            f"time: the best ratio with these products, everything else at zero")
    return report


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="registry key (default: the default MLM)")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3, help="measurements, each of --runs calls per side")
    parser.add_argument("--device", default="auto", choices=["cpu", "cuda", "mps", "auto"])
    parser.add_argument("--json", action="store_true", help="print the report as one JSON line at the end")
    args = parser.parse_args(argv)
    report = run(args.model, args.runs, args.repeat, args.device)
    if args.json:
        print(json.dumps(report))


if __name__ == "__main__":
    main()
