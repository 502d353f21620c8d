"""Fill-mask on the held-out split with and without a causal mask, at the same positions.

    python -m scripts.evaluate_causal [--model minilm-mlm] [--limit N] [--markdown]

data/heldout.txt (the corpus's fixed held-out split, never trained on), 15 % of the tokens
masked with the seed of scripts/evaluate.py (so the bidirectional row equals its figures);
the causal row is the same model, the same positions, each position seeing only itself
and its left. The model was trained bidirectionally, never with a causal mask.
"""

from __future__ import annotations

import argparse
import sys


from models import evaluate_causal


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm-mlm", help="a registry MLM (default minilm-mlm)")
    parser.add_argument("--limit", type=int, default=None, help="first N held-out sentences only")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args(argv)
    r = evaluate_causal(args.model, limit=args.limit)
    print(f"{r.model_key}: {r.sentences} held-out sentences, {r.positions} masked positions", file=sys.stderr)
    rows = [
        ("bidirectional (as trained)", r.bidirectional_top1, r.bidirectional_top5, r.bidirectional_loss),
        ("causal mask (left context only)", r.causal_top1, r.causal_top5, r.causal_loss),
    ]
    if args.markdown:
        print("| attention | held-out top-1 | held-out top-5 | loss (nats) |")
        print("|---|---|---|---|")
        for name, t1, t5, loss in rows:
            print(f"| {name} | {t1:.1%} | {t5:.1%} | {loss:.3f} |")
    else:
        for name, t1, t5, loss in rows:
            print(f"{name:34s} top-1 {t1:6.1%}  top-5 {t5:6.1%}  loss {loss:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
