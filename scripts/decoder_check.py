"""The zoo's decoder twin, checked as a user would meet it, offline:

    .venv/bin/python -m scripts.decoder_check            # loads, continues a story, held-out loss
    .venv/bin/python -m scripts.decoder_check --table    # and the measured encoder/decoder table
    .venv/bin/python -m scripts.decoder_check --write    # and ship that table beside the decoder

Prints: that ``mini-decoder`` loads with no network, five sampled continuations of "Once upon a
time there was a" (seeds 0-4) and how many different words they use, and its held-out
next-piece loss on the zoo's score split recomputed here beside the word-frequency baseline
(each piece from its count in the training corpus), with the gap the card quotes. Exit 1 when
the gap is under 1.5 nats or the continuations repeat one word.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the check is that it loads with no network

PROMPT = "Once upon a time there was a"
TARGET_NATS = 1.5


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--key", default="mini-decoder")
    p.add_argument("--table", action="store_true", help="also print encoder_vs_decoder() (minutes the first time)")
    p.add_argument("--write", action="store_true",
                   help="and ship that table in the decoder's folder (versus.json: what Lesson 1 shows before "
                        "Compare measures it on a server)")
    args = p.parse_args(argv)

    import numpy as np

    from models import encoder_vs_decoder, generate_left_to_right, get_spec, load_model
    from models.decoder.versus import corpus_counts, decoder_next_piece, write_shipped_table
    from models.zoo.data import heldout_splits
    from models.zoo.scores import next_piece_batches

    spec = get_spec(args.key)
    loaded = load_model(spec, head="clm")
    print(f"{args.key}: {type(loaded.model).__name__} loaded offline from {spec.source}")
    texts = [generate_left_to_right(args.key, PROMPT, steps=12, seed=seed, top_k=20).text for seed in range(5)]
    words = [w.lower() for t in texts for w in re.findall(r"[A-Za-z]+", t[len(PROMPT):])]
    for seed, text in enumerate(texts):
        print(f"  seed {seed}: {text}")
    print(f"  {len(set(words))} different words among the {len(words)} generated")
    score = heldout_splits()[1]
    losses, right = decoder_next_piece(loaded, score)
    counts = corpus_counts(loaded.tokenizer, Path(spec.source))
    if counts is None:
        print("no piece counts shipped with the decoder and no corpus here (.cache/corpus): build it with "
              "python -m scripts.build_corpus for the baseline")
        return 1
    logp = np.log((counts + 1.0) / (counts.sum() + len(counts)))
    pieces = np.concatenate([t[t != -100].numpy() for _, _, t in next_piece_batches(loaded.tokenizer, score)])
    baseline = float(-logp[pieces].mean())
    gap = baseline - float(losses.mean())
    print(f"held-out next-piece loss {losses.mean():.3f} nats over {len(losses):,} pieces (top-1 {right.mean():.1%}); "
          f"word-frequency baseline {baseline:.3f}; {gap:.2f} nats below it (target >= {TARGET_NATS})")
    if args.table or args.write:
        table = encoder_vs_decoder(spec.twin, args.key)
        if args.write:
            print(f"  written to {write_shipped_table(table, get_spec(spec.twin), spec)}")
        for r in table.rows:
            base = "" if r.baseline is None else f", baseline {r.baseline:.4g} ({r.baseline_name})"
            print(f"  {r.task}: encoder {r.encoder:.4g}, decoder {r.decoder:.4g}{base}; {r.better} is better")
    return 0 if gap >= TARGET_NATS and len(set(words)) > 1 else 1


if __name__ == "__main__":
    sys.exit(main())
