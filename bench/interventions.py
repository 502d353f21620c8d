"""Benchmark: ``head_importance`` on minilm-mlm (6 layers x 12 heads, a 12-token sentence).

    python -m bench.interventions [--runs 3] [--threads 2] [--json]

Each head knocked out alone is one batch row (73 rows with the unablated one); the call is
timed whole, from the text to the grid, after one warm-up call. ``--runs`` measurements
(default 3), their median and spread, the machine (CPU model and flags) first; the target
is 2 s on two cores. For reference, the other three interventions on the same text are timed
once each (the logit lens, two heads knocked out, the causal trace against a same-length
corrupt text).
"""

from __future__ import annotations

import json
import time


from bench.bench_common import machine_line, runs_arguments, spread, spread_text
from models import ablate_heads, get_device, get_spec, head_importance, load_model, logit_lens, patch_activations, tokenize

KEY = "minilm-mlm"
TEXT = "The old mill by the [MASK] turned very slowly."
CORRUPT = "The old mill by the [MASK] turned very quickly."
TOKENS = 12
TARGET_S = 2.0


def _timed(call) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def main(argv=None) -> dict:
    args = runs_arguments(__doc__, argv)
    load_model(get_spec(KEY), head="mlm")
    print(machine_line(get_device()))
    tokens = len(tokenize(KEY, TEXT).tokens)
    assert tokens == TOKENS, f"the bench's sentence is {tokens} tokens for {KEY}, not {TOKENS}"
    head_importance(KEY, TEXT)  # warm-up
    runs = [_timed(lambda: head_importance(KEY, TEXT)) for _ in range(args.runs)]
    others = {
        "logit_lens": _timed(lambda: logit_lens(KEY, TEXT)),
        "ablate_heads (2 heads)": _timed(lambda: ablate_heads(KEY, TEXT, [(2, 3), (4, 1)])),
        "patch_activations": _timed(lambda: patch_activations(KEY, TEXT, CORRUPT)),
    }
    print(f"head_importance({KEY}, {tokens} tokens, 6 x 12 heads): {spread_text(runs)} s")
    for name, seconds in others.items():
        print(f"  {name}: {seconds:.3f} s (one call)")
    median = spread(runs)["median"]
    print(f"SUMMARY head_importance median {median:.3f} s, target <= {TARGET_S} s: "
          f"{'met' if median <= TARGET_S else 'NOT met'}")
    result = {"head_importance": spread(runs), "others_s": others, "tokens": tokens, "threads": args.threads}
    if args.json:
        print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
