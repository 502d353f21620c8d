"""The Hub models' real shapes, on their stand-ins (random weights, ``scripts/standins.py``).

    .venv/bin/python -m bench.real_shapes memory|fill-mask|burst|attention|compare [--runs 3] [--tokens 128]
                                          [--keys bert-base,bert-large] [--cache DIR]

The stand-ins are written first where the cache (``--cache``, default ``.cache/standins-hub``)
lacks them, and every measurement runs in a fresh process with ``HF_HUB_CACHE`` pointing there
and ``HF_HUB_OFFLINE=1``: the app's normal Hub path, as after a download. Timings and memory
depend on the shapes only; no answer of a stand-in means anything.

* ``memory``: the server's resident memory (VmRSS) after each family loads once and answers
  (fill-mask, or embed for a model without an MLM head), in catalogue order, with what the
  memory budget counts (``memory_budget``) and how many items it dropped.
* ``fill-mask``: one ``fill_mask`` call on a new text (the model loaded), per model.
* ``burst``: a class's burst without the server: 30 different one-mask sentences sent to
  ``fill_mask`` at once from 30 threads (the model loaded), until the last answer; the live
  path's batcher shares forwards between them as in the app. What the class benches'
  burst p95 cannot go below on this CPU (``bench.classroom``).
* ``attention``: ``extract_attention`` on a new ``--tokens``-token text (the model loaded), per
  model: bert-base 12 × 12 heads, bert-large 24 × 16 (the browser's first paint of the whole
  view: ``python -m bench.attention_view --standin KEY``).
* ``compare``: Compare's same-input view (``compare_fill_mask``) over every real shape at once,
  a new text each run.

Each prints the CPU, then per figure the median and range of ``--runs`` runs (a fresh process each).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# One run in a fresh process: prints one JSON line {figure: value}.
RUN = textwrap.dedent(
    """
    import json, sys, time
    what, keys, tokens, run = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3]), int(sys.argv[4])
    from models import (compare_fill_mask, embed, extract_attention, fill_mask, get_spec, load_model,
                        memory_budget, tokenize)

    def rss_mib():
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024

    def text_for(key, n):
        words = (f"Run {run} of {key}: " + "the river bank was quiet in the morning and the boats rested. " * 60).split()
        for end in range(len(words), 0, -1):
            if len(tokenize(key, " ".join(words[:end])).tokens) <= n:
                return " ".join(words[:end])

    out = {"rss at start (MiB)": rss_mib()}
    for key in keys:
        spec = get_spec(key)
        masked = f"Run {run}: the {spec.mask_token} sat on the mat near {key}."
        if what == "memory":
            fill_mask(key, masked, 5) if spec.can("mlm") else embed(key, [masked])
            report = memory_budget()
            out[f"rss after {key} (MiB)"] = rss_mib()
            out[f"budget counts after {key} (MiB)"] = report.used_bytes / 2**20
            out["dropped"] = report.dropped
        elif what == "fill-mask":
            fill_mask(key, "warm [MASK] up.".replace("[MASK]", spec.mask_token), 5)
            start = time.perf_counter()
            fill_mask(key, masked, 5)
            out[f"{key} fill_mask (ms)"] = (time.perf_counter() - start) * 1e3
        elif what == "burst":
            from concurrent.futures import ThreadPoolExecutor

            fill_mask(key, "warm [MASK] up.".replace("[MASK]", spec.mask_token), 5)
            texts = [f"Student {i} of run {run} wrote that the {spec.mask_token} was on the table." for i in range(30)]
            with ThreadPoolExecutor(30) as pool:
                start = time.perf_counter()
                list(pool.map(lambda t: fill_mask(key, t, 5), texts))
            out[f"{key} 30 fill_mask calls at once, until the last (ms)"] = (time.perf_counter() - start) * 1e3
        elif what == "attention":
            load_model(spec, attn_implementation="eager")
            text = text_for(key, tokens)
            start = time.perf_counter()
            result = extract_attention(key, text)
            out[f"{key} {result.num_layers}x{result.num_heads} heads, {len(result.tokens)} tokens (ms)"] = (
                time.perf_counter() - start) * 1e3
    if what == "compare":
        text = f"Run {run}: the capital of France is [MASK]."
        compare_fill_mask(keys, text, 5)  # every model loaded once
        start = time.perf_counter()
        compare_fill_mask(keys, text.replace("France", "Spain"), 5)
        out[f"compare_fill_mask over {len(keys)} models (ms)"] = (time.perf_counter() - start) * 1e3
    print(json.dumps(out))
    """
)


def ensure_standins(cache: Path, keys: list[str]) -> None:
    """Write the stand-ins the cache lacks (the real shapes; minutes for all of them)."""
    from scripts import standins

    entries = standins.hub_keys()
    for key in keys:
        folder = cache / ("models--" + standins.catalogue.get_spec(key).source.replace("/", "--"))
        if not folder.is_dir():
            print(f"writing the stand-in of {key} in {cache}")
            standins.write_standin(key, entries[key], cache, small=False, corpus=REPO / "data" / "train_sample.txt")


def one_run(what: str, keys: list[str], tokens: int, run: int, cache: Path) -> dict:
    env = dict(os.environ, HF_HUB_CACHE=str(cache), HF_HUB_OFFLINE="1")
    done = subprocess.run([sys.executable, "-c", RUN, what, ",".join(keys), str(tokens), str(run)], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=1800)
    if done.returncode:
        raise SystemExit(f"run {run} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    from bench.bench_common import cpu_line, spread_text
    from scripts import standins

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("memory", "fill-mask", "burst", "attention", "compare"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=128, help="attention: the input's length in tokens")
    parser.add_argument("--keys", default="", help="registry keys (default: bert-base,bert-large for fill-mask "
                        "and attention; bert-base for burst; every Hub model with a stand-in for memory and compare)")
    parser.add_argument("--cache", type=Path, default=standins.DEFAULT_OUT)
    args = parser.parse_args(argv)
    every = list(standins.hub_keys())
    keys = [k for k in args.keys.split(",") if k] or (
        ["bert-base", "bert-large"] if args.what in ("fill-mask", "attention") else
        ["bert-base"] if args.what == "burst" else every)
    if args.what == "compare":
        from models import get_spec

        keys = [k for k in keys if get_spec(k).can("mlm")]  # Compare's fill-mask reads MLMs
    ensure_standins(args.cache, keys)
    print(cpu_line())
    print(f"{args.what} on the stand-ins (random weights, the real shapes) of {', '.join(keys)}; "
          f"{args.runs} runs, each a fresh process")
    runs = [one_run(args.what, keys, args.tokens, run, args.cache) for run in range(1, args.runs + 1)]
    for figure in runs[0]:
        values = [r[figure] for r in runs]
        print(f"{figure}: {spread_text(values, '{:.0f}')}")


if __name__ == "__main__":
    main()
