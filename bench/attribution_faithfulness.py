"""Attribution faithfulness over held-out sentences, and what integrated gradients' steps cost.

    .venv/bin/python -m bench.attribution_faithfulness [--model minilm-mlm] [--n 40] [--seed 0]
        [--ig-steps 32] [--timing-steps 16,32,64] [--threads 2]

1. ``--n`` seeded held-out cloze sentences (``models.attribution.faithfulness.heldout_cloze``: one word
   masked in each, never trained on). For each method, the deletion curve of the model's top
   guess at the mask: the area between the random-order curve (mean of 5 seeded orders) and
   the method's curve, over the share of words removed. Prints per method the mean area,
   its standard error, and how often the method beats random (area > 0); and integrated
   gradients' completeness gap |sum(scores) - (f(x) - f(baseline))| (median, max).
2. The time of one integrated-gradients attribution per step count on a ~30-token sentence
   (median of ``--runs``; the first run, with the model load, is not counted).
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench.bench_common import machine_line
from models import get_spec

TIMING_TEXT = ("After the long meeting on Tuesday, the tired engineers finally opened the [MASK] "
               "and walked slowly into the cold room behind the old station.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm-mlm")
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ig-steps", type=int, default=32)
    parser.add_argument("--timing-steps", default="16,32,64")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--skip-faithfulness", action="store_true")
    args = parser.parse_args()

    import numpy as np
    import torch

    from models import ATTRIBUTION_METHODS, attribute_fill_mask, load_model
    from models.attribution.faithfulness import heldout_cloze, measure_faithfulness

    if args.threads:
        torch.set_num_threads(args.threads)
    loaded = load_model(get_spec(args.model), head="mlm")
    print(machine_line(loaded.device))

    if not args.skip_faithfulness:
        texts = heldout_cloze(args.n, seed=args.seed)
        lengths = [len(loaded.tokenizer(t)["input_ids"]) for t in texts]
        print(f"\n{len(texts)} held-out sentences (seed {args.seed}), {min(lengths)}-{max(lengths)} "
              f"tokens (median {statistics.median(lengths):.0f}); model {args.model}; "
              f"IG {args.ig_steps} steps")
        started = time.perf_counter()
        rows = measure_faithfulness(args.model, texts, ATTRIBUTION_METHODS, n_steps=args.ig_steps)
        print(f"({time.perf_counter() - started:.0f} s)\n")
        print("| method | mean area (random − attributed) | ± s.e. | beats random |")
        print("|---|---|---|---|")
        for row in rows:
            se = np.std(row.areas, ddof=1) / np.sqrt(len(row.areas))
            print(f"| {row.method} | {row.mean_area:+.4f} | {se:.4f} | "
                  f"{row.beats_random:.0%} ({sum(a > 0 for a in row.areas)}/{len(row.areas)}) |")
        gaps = [abs(attribute_fill_mask(args.model, t, "integrated_gradients", n_steps=args.ig_steps)
                    .completeness_delta) for t in texts]
        print(f"\nIG completeness gap |Captum delta|, {args.ig_steps} steps: median {np.median(gaps):.5f}, "
              f"max {max(gaps):.5f} (in probability)")

    n_tokens = len(loaded.tokenizer(TIMING_TEXT)["input_ids"])
    print(f"\nIntegrated gradients on a {n_tokens}-token sentence, median of {args.runs} runs:")
    for steps in (int(s) for s in args.timing_steps.split(",")):
        times = []
        for run in range(args.runs + 1):
            text = TIMING_TEXT + " " * run  # a new text each run: not served from the result cache
            started = time.perf_counter()
            result = attribute_fill_mask(args.model, text, "integrated_gradients", n_steps=steps)
            if run:
                times.append(time.perf_counter() - started)
        print(f"  {steps:3d} steps: {statistics.median(times):.2f} s "
              f"(completeness gap {result.completeness_delta:+.5f})")


if __name__ == "__main__":
    main()
