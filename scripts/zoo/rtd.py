"""ELECTRA's replaced-token detection on the shipped mini-electra, read apart.

    .venv/bin/python -m scripts.zoo rtd [--corpus .cache/corpus] [--write]

Loads the shipped discriminator and generator (``weights/zoo/mini-electra``, float16 read
back in float32; ``--folder``: another discriminator, e.g. ``weights/zoo/mini-electra-detector``,
read beside mini-electra's generator), corrupts the held-out chunks as training's final score did (``rtd_scores``:
the same chunks, ELECTRA's masking, the generator's samples, the same seed), and prints
``rtd_summary``: the ROC AUC of P(replaced) for replaced against original tokens, and the
same read apart by where the generator wrote (replaced against correctly guessed
originals at the positions it rewrote; against tokens it never saw; written positions
against untouched ones). The record's AUC was taken on the float32 model before export, so
the shipped weights' figure can differ in the last digits. ``--write`` keeps the result in
the record as ``rtd_heldout_shipped``.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from transformers import AutoTokenizer, ElectraForMaskedLM, ElectraForPreTraining

from models.zoo import data as zd
from models.zoo import families as zm
from models.zoo import scores as zs

REPO = Path(__file__).resolve().parents[2]
FOLDER = REPO / "weights" / "zoo" / "mini-electra"


def add_arguments(p) -> None:
    p.add_argument("--corpus", type=Path, default=REPO / ".cache" / "corpus")
    p.add_argument("--folder", type=Path, default=FOLDER, help="a discriminator's folder (default: the shipped "
                   "mini-electra); without a generator/ of its own, mini-electra's generator corrupts the text")
    p.add_argument("--write", action="store_true", help="keep the figures in the record (rtd_heldout_shipped)")


def measure(folder: Path, corpus: Path) -> dict:
    """``rtd_summary`` of the discriminator in ``folder`` on the held-out chunks, corrupted as
    mini-electra's training scored them (its shape, seed, masking and generator)."""
    corpus = corpus / "train_ordered.tsv"
    if not corpus.is_file():
        raise SystemExit(f"{corpus} is missing: build the corpus first (python -m scripts.build_corpus)")
    shipped = json.loads((FOLDER / "record.json").read_text(encoding="utf-8"))
    generator = folder / "generator" if (folder / "generator").is_dir() else FOLDER / "generator"
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    models = {"model": ElectraForPreTraining.from_pretrained(str(folder), dtype=torch.float32),
              "generator": ElectraForMaskedLM.from_pretrained(str(generator), dtype=torch.float32)}
    shape = shipped["config"]["shape"]
    chunks = zd.corpus_chunks(corpus, tokenizer, shape["max_len"])
    examples = zd.Examples(tokenizer, chunks, shape["max_len"], shipped["config"]["seed"])
    return zs.rtd_scores(zm.Objective("mini-electra", models), examples)


def run(args) -> int:
    record_path = args.folder / "record.json"
    record = json.loads(record_path.read_text(encoding="utf-8"))
    out = measure(args.folder, args.corpus)
    print(f"{args.folder.name}, shipped weights, {out['replaced']:,} replaced and {out['original']:,} original tokens "
          f"({out['rewritten_original']:,} of them written back as themselves by the generator)")
    trained = record.get("rtd_heldout", {}).get("roc_auc")
    print(f"  ROC AUC, replaced vs original:        {out['roc_auc']:.3f}"
          + (f" (the record: {trained:.3f}, on the float32 model)" if trained is not None else ""))
    print(f"  replaced vs correctly guessed:         {out['rewritten_auc']:.3f}")
    print(f"  replaced vs untouched:                 {out['untouched_auc']:.3f}")
    print(f"  written positions vs untouched ones:   {out['where_auc']:.3f}")
    if args.write:
        record["rtd_heldout_shipped"] = {**out, "weights": "the shipped float16 weights, read back in float32",
                                         "script": "scripts.zoo rtd"}
        record_path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        print(f"written: {record_path.relative_to(REPO)} (rtd_heldout_shipped)")
    return 0
