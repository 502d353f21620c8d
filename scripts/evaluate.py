"""Score every available fill-mask model of the registry, next to the unigram baseline.

    python -m scripts.evaluate [--limit N] [--markdown]

held-out: data/heldout.txt (the corpus's fixed held-out split, never trained on), 15 % of
the tokens masked with a fixed seed, top-1 / top-5 / mean loss at those positions.
everyday: data/everyday_cloze.json, one mask per sentence; a hit when an accepted answer
is the top guess (top-1) or among the top 5 (top-5).
unigram baseline: always guess the most frequent tokens of the training split
(needs .cache/corpus/train.txt from scripts/build_corpus.py; skipped without it).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


from models import evaluate_fill_mask, get_spec, list_models, load_tokenizer
from models.pretraining.evaluation import heldout_sentences, unigram_baseline
from models.pretraining.mlm_data import read_sentences

REPO = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="first N held-out sentences only")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args(argv)
    rows = []
    train = REPO / ".cache" / "corpus" / "train.txt"
    if train.is_file():
        tok = load_tokenizer(get_spec("minilm-l6"))
        base = unigram_baseline(tok, read_sentences(train), heldout_sentences()[: args.limit])
        rows.append(("unigram baseline (5 most frequent tokens)", base.top1, base.top5, base.loss, None, None))
    else:
        print("(no .cache/corpus/train.txt: run python -m scripts.build_corpus for the unigram baseline)")
    for info in list_models():
        if not (info.has_mlm_head and info.available):
            continue
        held = evaluate_fill_mask(info.key, "heldout", limit=args.limit)
        every = evaluate_fill_mask(info.key, "everyday")
        rows.append((info.key, held.top1, held.top5, held.loss, every.top1, every.top5))
        print(f"scored {info.key}", file=sys.stderr, flush=True)

    def pct(x):
        return "" if x is None else f"{x:.1%}"

    header = ("model", "held-out top-1", "held-out top-5", "held-out loss", "everyday top-1", "everyday top-5")
    lines = [header] + [(r[0], pct(r[1]), pct(r[2]), f"{r[3]:.3f}", pct(r[4]), pct(r[5])) for r in rows]
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for line in lines[1:]:
            print("| " + " | ".join(line) + " |")
    else:
        widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
        for line in lines:
            print("  ".join(cell.ljust(w) for cell, w in zip(line, widths)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
