"""BERT's next-sentence head trained on past the shared budget to read the story, not the source.

    nice -n 19 .venv/bin/python -m scripts.zoo nsp --out WORK/nsp --minutes 30 [--install]

Starts from the shipped ``weights/zoo/mini-bert`` (BertForPreTraining) and trains its encoder
and NSP head on NSP alone (no MLM: the model it ships answers the pair views only) on pairs
of the training split's running text (``models.zoo.pairs.NARRATIVE``), built by
``Examples.same_source_pair``: A and B runs of whole sentences around a cut, half of the pairs
one sentence each, a negative's B as many whole sentences of another place in the same source.
Nothing but the story tells the labels apart: not the kind of text, not where B stops, not the
pair's length. The held-out chunks are never trained on.

AdamW (lr ``--lr``, linear warm-up over the first 100 steps, then constant), weight decay
0.01, float32, batches of ``--batch`` pairs. A checkpoint every 100 steps in ``--out`` (a run
resumes from it); at the end (``--steps`` or ``--minutes``) the model is saved there with
``record.json``. ``--install`` then ships it as ``weights/zoo/mini-bert-nsp`` (float16): its
record gains the held-out figures of ``scripts.zoo objectives nsp`` (on the shipped weights)
and its card is written.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from transformers import AutoTokenizer, BertForPreTraining

from models.zoo import data as zd
from models.zoo import families as zm
from models.zoo import pairs as zp

from .resumable import Resumable, add_common_arguments, ship

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "weights" / "zoo" / "mini-bert"
DEST = REPO / "weights" / "zoo" / "mini-bert-nsp"


def add_arguments(p) -> None:
    add_common_arguments(p, "pairs per step", "weights/zoo/mini-bert-nsp")


def training_pairs(corpus: Path):
    """(tokenizer, examples, the training chunks of running text the pairs are cut from)."""
    tokenizer = AutoTokenizer.from_pretrained(str(SHIPPED))
    record = json.loads((SHIPPED / "record.json").read_text(encoding="utf-8"))
    max_len, seed = record["config"]["shape"]["max_len"], record["config"]["seed"]
    names: list[str] = []
    chunks = zd.corpus_chunks(corpus / "train_ordered.tsv", tokenizer, max_len, names=names)
    examples = zd.Examples(tokenizer, chunks, max_len, seed, sources=names, nsp_negatives="same-source")
    split = zp.pair_split(examples, names)
    return tokenizer, examples, [i for i in split.narrative("train") if len(split.train[names[i]]) > 1]


def run(args) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    tokenizer, examples, pool = training_pairs(args.corpus)
    model = BertForPreTraining.from_pretrained(str(SHIPPED), dtype=torch.float32)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    place = Resumable(args.out)
    if place.state is not None:
        model.load_state_dict(place.state["model"]), opt.load_state_dict(place.state["opt"])
    log = []
    model.train()
    while place.running(args.steps, args.minutes):
        rng = np.random.default_rng([17, place.step])
        rows = [examples.same_source_pair(pool[int(j)], rng) for j in rng.choice(len(pool), args.batch)]
        log.append(train_on(model, opt, examples, rows, args.lr * min(1.0, (place.step + 1) / 100)))
        place.count += len(rows)
        place.step += 1
        if place.step % 25 == 0:
            print(json.dumps({"step": place.step, "pairs": place.count,
                              "loss": round(float(np.mean([x[0] for x in log[-25:]])), 4),
                              "accuracy": round(float(np.mean([x[1] for x in log[-25:]])), 3),
                              "wall_s": round(place.wall_s())}), flush=True)
        if place.step % 100 == 0:
            place.save(model=model.state_dict(), opt=opt.state_dict())
    place.save(model=model.state_dict(), opt=opt.state_dict())
    model.save_pretrained(str(args.out))
    tokenizer.save_pretrained(str(args.out))
    (args.out / "record.json").write_text(json.dumps({
        "start": "the shipped mini-bert (its encoder and NSP head; the MLM head not trained)", "steps": place.step,
        "pairs": place.count, "batch": args.batch, "lr": args.lr, "objective": "nsp", "nsp_negatives": "same-source",
        "pairs_built": "Examples.same_source_pair on the training split's running text: A and B whole sentences "
                       "around a cut, half of the pairs one sentence each; a negative's B as many whole sentences "
                       "of another place in the same source",
        "sources": list(zp.NARRATIVE), "wall_minutes": place.wall_s() / 60, "cpu_minutes": place.cpu_s() / 60,
        "torch": torch.__version__, "script": "scripts.zoo nsp"}, indent=1) + "\n", encoding="utf-8")
    if args.install:
        install(args.out, args.corpus)
    return 0


def train_on(model, opt, examples, rows: list, lr: float) -> tuple[float, float]:
    """One step of NSP alone on ``rows`` ([CLS] A [SEP] B [SEP], types, label): (loss, accuracy)."""
    for group in opt.param_groups:
        group["lr"] = lr
    ids, types, attention = zd.pad_batch([r[0] for r in rows], [r[1] for r in rows], examples.pad)
    labels = torch.tensor([r[2] for r in rows])
    _, pooled = zm.encode("mini-bert", model, ids, attention, types)
    logits = model.cls.seq_relationship(pooled)
    loss = F.cross_entropy(logits, labels)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return float(loss.detach()), float((logits.argmax(-1) == labels).float().mean())


def install(out: Path, corpus: Path, dest: Path = DEST) -> None:
    """The trained model in ``out`` -> ``dest``, measured there on the held-out narrative pairs."""
    from . import objectives

    ship(BertForPreTraining, out, dest, SHIPPED, lambda folder: {
        "pair_objective": "nsp",
        "pair_narrative": {**objectives.pair_figures("mini-bert", folder, corpus, SHIPPED),
                           "script": f"scripts.zoo objectives nsp --folder weights/zoo/{dest.name}"}})
