"""Benchmark 1: our fill_mask vs transformers.pipeline("fill-mask"), same model, same input.

    .venv/bin/python -m bench.fill_mask [--model minilm-mlm] [--runs 200] [--device cpu]

Both use the same loaded model object and tokenizer. Runs alternate (ours, pipeline, ours,
...) so that drift in machine load hits both alike; the figures are medians. Target: ours
<= 0.8 x pipeline time. Prints the machine, versions and the ratio per input.
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench.bench_common import machine_line

INPUTS = {
    "one mask": "The cat sat on the [MASK] and looked out of the window at the birds.",
    "three masks": "She opened the [MASK], walked into the [MASK] and sat down at the [MASK].",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="registry key (default: the default MLM)")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda", "mps", "auto"])
    args = parser.parse_args()

    import torch
    from transformers import pipeline

    from models import default_model_key, fill_mask, load_model, set_device

    set_device(args.device)
    key = args.model or default_model_key()
    loaded = load_model(key, head="mlm")
    pipe = pipeline("fill-mask", model=loaded.model, tokenizer=loaded.tokenizer, device=loaded.device)
    print(machine_line(loaded.device))
    print(f"model: {key} ({loaded.dtype}), runs per side: {args.runs}, top_k 5\n")
    print(f"{'input':<12} {'ours ms':>9} {'pipeline ms':>12} {'ratio':>7}  target <= 0.80")

    for name, text in INPUTS.items():
        pipe_text = text.replace("[MASK]", loaded.tokenizer.mask_token)
        # Same answers first: the benchmark compares equal work.
        ours = fill_mask(key, text, top_k=5)
        ref = pipe(pipe_text, top_k=5)
        ref = [ref] if isinstance(ref[0], dict) else ref
        for mask, expected in zip(ours.masks, ref):
            assert [p.token_id for p in mask.predictions] == [e["token"] for e in expected]
        for _ in range(10):  # warm-up
            fill_mask(key, text, top_k=5)
            pipe(pipe_text, top_k=5)
        t_ours, t_pipe = [], []
        for _ in range(args.runs):
            start = time.perf_counter()
            fill_mask(key, text, top_k=5)
            _sync(torch, loaded.device)
            t_ours.append(time.perf_counter() - start)
            start = time.perf_counter()
            pipe(pipe_text, top_k=5)
            _sync(torch, loaded.device)
            t_pipe.append(time.perf_counter() - start)
        ours_ms = statistics.median(t_ours) * 1e3
        pipe_ms = statistics.median(t_pipe) * 1e3
        verdict = "met" if ours_ms <= 0.8 * pipe_ms else "NOT met"
        print(f"{name:<12} {ours_ms:>9.2f} {pipe_ms:>12.2f} {ours_ms / pipe_ms:>7.2f}  {verdict}")


def _sync(torch, device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


if __name__ == "__main__":
    main()
