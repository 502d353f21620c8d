"""The offline fill-mask model's written-facts stage, on this machine's CPU.

    python -m scripts.build_corpus                                   # the corpus, with data/written/
    python -m scripts.knowledge_stage mix                            # .cache/knowledge-mix/train.txt
    nice -n 19 python -m scripts.knowledge_stage train --minutes 70  # -> .cache/runs/minilm-d
    python -m scripts.evaluate_knowledge --before weights/minilm-mlm --after .cache/runs/minilm-d

A fourth stage of ``minilm-mlm`` with the existing trainer (``scripts/pretrain.py``: the same
objective, 15 % / 80-10-10 dynamic masking, ``--resume`` from the shipped weights, so its
record goes on from stage 3). Its mix (``mix``): the two sources written for this project
(``facts-written``, ``everyday-written``: data/written/) repeated ``WEIGHTS`` times, the
registry's encyclopedic sources (gcide, elements, facts-templated), and a replay of
``REPLAY`` of the older sources' training sentences (a fixed choice by hash) so that what the
model knows is kept; the held-out split is the tracked ``data/heldout.txt`` (the older
sources' 3,191 sentences, never trained on), so its numbers compare with stages 1-3.

``train`` runs ``pretrain.py`` with ``RECIPE`` and a wall-clock budget (``--minutes``), on the CPU
unless ``--device`` says otherwise; the run checkpoints at every evaluation, and
``pretrain.py --finish --out RUN`` ends a run that was stopped at its last checkpoint.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from scripts.gpu_stage_knowledge import NEW_SOURCES, SHIPPED, replayed

REPO = Path(__file__).resolve().parent.parent
MIX = REPO / ".cache" / "knowledge-mix"
RUN = REPO / ".cache" / "runs" / "minilm-d"
WRITTEN_SOURCES = ("facts-written", "everyday-written")
# How many times each source enters the mix (1 when not listed). The written sources are
# small (about 800 sentences): the shipped 70-minute CPU stage drew 5,965 x 64 lines, 3.7
# passes over the mix, so each written line was seen about 59 times and each of its words
# masked about 9 times.
WEIGHTS = {"facts-written": 16, "everyday-written": 16, "facts-templated": 2, "elements": 2}
REPLAY = 0.3   # share of the older sources' training sentences replayed (chosen by hash)
# pretrain.py arguments (--out, --corpus, --resume, --device, --minutes are added by `train`):
# stage 2's CPU recipe (batches of 64, every layer) at half its learning rates, bf16 autocast.
RECIPE = ["--train-from-layer", "0", "--autocast", "bf16", "--steps", "8000", "--batch-size", "64",
          "--lr-encoder", "1e-4", "--lr-head", "2.5e-4", "--warmup", "0.04", "--eval-every", "500",
          "--snapshots", "0,0.1,0.25,0.5,1", "--threads", "2"]


def mix(corpus: Path, out: Path, weights: dict[str, int] = WEIGHTS, replay: float = REPLAY) -> dict[str, int]:
    """Write ``out/train.txt`` (the mix, in a fixed shuffled order) and ``out/heldout.txt``;
    return the number of lines each source contributed."""
    import random

    lines, counts = [], {}
    with open(corpus / "train_ordered.tsv", encoding="utf-8") as fh:
        for row in fh:
            source, _, sentence = row.rstrip("\n").partition("\t")
            new = source in NEW_SOURCES or source in WRITTEN_SOURCES
            if not new and not replayed(sentence, replay):
                continue
            n = int(weights.get(source, 1))
            lines += [sentence] * n
            counts[source] = counts.get(source, 0) + n
    random.Random(0).shuffle(lines)
    out.mkdir(parents=True, exist_ok=True)
    (out / "train.txt").write_text("".join(s + "\n" for s in lines), encoding="utf-8")
    shutil.copy2(REPO / "data" / "heldout.txt", out / "heldout.txt")
    (out / "mix.json").write_text(json.dumps({"weights": weights, "replay": replay, "lines": counts},
                                             indent=1) + "\n", encoding="utf-8")
    return counts


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("mix", help="write the training mix")
    m.add_argument("--corpus", type=Path, default=REPO / ".cache" / "corpus")
    m.add_argument("--out", type=Path, default=MIX)
    t = sub.add_parser("train", help="run the stage (pretrain.py --resume the shipped model)")
    t.add_argument("--mix", type=Path, default=MIX)
    t.add_argument("--out", type=Path, default=RUN)
    t.add_argument("--minutes", type=float, default=70.0)
    t.add_argument("--device", default="cpu")
    t.add_argument("--resume", type=Path, default=SHIPPED, help="the run or shipped folder it continues")
    args, extra = p.parse_known_args(argv)
    if args.cmd == "mix":
        counts = mix(args.corpus, args.out)
        print(json.dumps(counts), f"-> {args.out} ({sum(counts.values()):,} lines)")
        return 0
    cmd = [sys.executable, "-m", "scripts.pretrain", "--out", str(args.out), "--corpus", str(args.mix),
           "--resume", str(args.resume), "--device", args.device, "--minutes", str(args.minutes), *RECIPE, *extra]
    print("+ " + " ".join(cmd), flush=True)
    return subprocess.call(cmd, cwd=REPO, env={**os.environ, "PYTHONUNBUFFERED": "1"})


if __name__ == "__main__":
    sys.exit(main())
