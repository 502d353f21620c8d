"""NSP, SOP and ELECTRA's detector on text as a student types it: the heads' figures.

    .venv/bin/python -m scripts.zoo objectives nsp [--write]       # mini-bert's NSP, two kinds of negatives
    .venv/bin/python -m scripts.zoo objectives sop [--write]       # mini-albert's SOP on narrative pairs
    .venv/bin/python -m scripts.zoo objectives electra [--write] [--folder F]   # the swapped word found?

``nsp`` and ``sop``: one pair from each held-out chunk (the 2 % ``models.zoo.data`` never
trains on) of running text (``models.zoo.pairs.NARRATIVE``: novels, stories, speeches, the
Bible), built by ``models.zoo.pairs.make_pair`` two ways: ``segments``, training's cut of
the chunk (A its first sentences, B the rest), and ``sentences``, A one sentence and B the
next (a student's pair). NSP's negatives (half the pairs) take B from another held-out
chunk: of another source (BERT's draw, which here is mostly another kind of text) or of the
same source (another place in the same book or speech, the same kind of text). SOP swaps
A and B in half the pairs.

``electra``: the discriminator's P(replaced) per word (the highest of its pieces') on the
project's single-swap sentences (``data/electra_swaps.json``) and on the held-out score
sentences with one word swapped for a word of another (``models.zoo.swaps``): the share of
sentences whose swapped word ranks first, and the ROC AUC of swapped words against the rest.

``--write`` keeps the figures in the model's ``record.json`` (``pair_narrative`` or
``swap_detection``), which its card and the pair and detection views read.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from models.zoo import data as zd
from models.zoo import families as zm
from models.zoo import pairs as zp
from models.zoo import swaps

REPO = Path(__file__).resolve().parents[2]
ZOO = REPO / "weights" / "zoo"
CUTS = {"segments": False, "sentences": True}


def pair_examples(folder: Path, corpus: Path) -> tuple:
    """(tokenizer, examples, each chunk's source) of the model in ``folder``: its chunks and
    pairs as training builds them."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    record = json.loads((folder / "record.json").read_text(encoding="utf-8"))
    max_len, seed = record["config"]["shape"]["max_len"], record["config"]["seed"]
    names: list[str] = []
    chunks = zd.corpus_chunks(corpus / "train_ordered.tsv", tokenizer, max_len, names=names)
    return tokenizer, zd.Examples(tokenizer, chunks, max_len, seed), names


def pair_figures(family: str, folder: Path, corpus: Path, start: Path | None = None) -> dict:
    """{"pairs", "accuracy": {"<cut>, <negatives>": share}} of the family's pair head in ``folder``;
    ``start``: the zoo model it was trained from, whose tokenizer, chunks and pairs it reads
    (default: ``folder``'s own)."""
    from transformers import AutoModelForPreTraining

    _, examples, names = pair_examples(start or folder, corpus)
    split = zp.pair_split(examples, names)
    objective = zm.Objective(family, {"model": AutoModelForPreTraining.from_pretrained(str(folder),
                                                                                     dtype=torch.float32)})
    negatives = zp.NEGATIVES if family == "mini-bert" else ("swapped",)
    found, pairs = {}, 0
    for cut, single in CUTS.items():
        for neg in negatives:
            out = zp.head_accuracy(objective, examples, split, single=single,
                                   negatives="same-source" if neg == "swapped" else neg)
            found[f"{cut}, {neg}"], pairs = out["accuracy"], out["pairs"]
    figures = {"pairs": pairs, "accuracy": found, "sources": list(zp.NARRATIVE)}
    if family == "mini-bert":
        ends = set(examples.tok.convert_tokens_to_ids([".", "!", "?", '"', "'"]))
        figures["segments_b_ends_a_sentence"] = zp.sentence_end_shares(examples, split, ends)
    return figures


def electra_figures(folder: Path) -> dict:
    from transformers import AutoTokenizer, ElectraForPreTraining

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    disc = ElectraForPreTraining.from_pretrained(str(folder), dtype=torch.float32)
    _, score = zd.heldout_splits()
    return {"written": swaps.swap_summary(tokenizer, disc, swaps.written_swaps()),
            "heldout": swaps.swap_summary(tokenizer, disc, swaps.swapped_sentences(score, limit=600))}


def write(folder: Path, key: str, figures: dict, script: str) -> None:
    path = folder / "record.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    record[key] = {**figures, "script": script}
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(f"written: {path} ({key})")


def add_arguments(p) -> None:
    p.add_argument("head", choices=("nsp", "sop", "electra"))
    p.add_argument("--corpus", type=Path, default=REPO / ".cache" / "corpus")
    p.add_argument("--folder", type=Path, default=None, help="the model's folder (default: the shipped one)")
    p.add_argument("--write", action="store_true", help="keep the figures in the model's record.json")


def run(args) -> int:
    key = {"nsp": "mini-bert", "sop": "mini-albert", "electra": "mini-electra"}[args.head]
    folder = args.folder or ZOO / key
    if args.head == "electra":
        figures = electra_figures(folder)
        for name, f in figures.items():
            print(f"{name}: {f['sentences']} sentences, swapped word first {f['first']:.1%} (by chance "
                  f"{f['chance_first']:.1%}); word ROC AUC {f['word_auc']:.3f}; mean P(replaced) swapped "
                  f"{f['swapped_mean_p']:.2f}, others {f['other_mean_p']:.2f}")
        record_key = "swap_detection"
    else:
        record = json.loads((folder / "record.json").read_text(encoding="utf-8"))
        # a head trained on past the budget (scripts.zoo nsp) reads its zoo model's chunks and pairs
        figures = pair_figures(key, folder, args.corpus, None if "config" in record else ZOO / key)
        print(f"{folder.name}, {args.head.upper()} on {figures['pairs']} held-out narrative pairs:")
        for name, acc in figures["accuracy"].items():
            print(f"  {name:32s} {acc:.1%}")
        if "segments_b_ends_a_sentence" in figures:
            ends = figures["segments_b_ends_a_sentence"]
            print(f"  segments whose B ends a sentence: positives {ends['positives']:.1%}, "
                  f"negatives {ends['negatives']:.1%}")
        record_key = "pair_narrative"
    if args.write:
        write(folder, record_key, figures, f"scripts.zoo objectives {args.head}")
    return 0

