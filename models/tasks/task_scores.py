"""The figures a task is judged by besides per-unit accuracy, on its held-out split, each beside
its baselines:

* ``entities``: exact-entity F1 per label (PER, LOC, ELEMENT, then all), the trained head's and a
  lookup of the training split's names (which knows no held-out name);
* ``sentiment``: accuracy, the head's, always the majority label's, and a word list's: the
  templates' own positive and negative adjectives counted (more positive ones: positive; a tie:
  the training split's majority label, as ``train_classifier``'s majority baseline picks it, the
  first label when they are balanced).

The head's predictions are read through the trained module itself (the text tokenized again),
so they are what ``classify`` answers.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import numpy as np
import torch

from ..embeddings.pooling import encode_unpadded
from ..registry import catalogue
from .entities import ENTITY_LABELS, lookup_tags, span_scores
from .features import word_positions

SENTIMENT_WORDS = catalogue.REPO_ROOT / "data" / "written" / "sentiment.json"
PREDICT_BATCH = 32


@dataclass(frozen=True)
class TaskScores:
    """The head's held-out figure per row beside each baseline's (values 0..1)."""

    metric: str  # "entity F1 (exact spans)" or "accuracy"
    rows: tuple[str, ...]  # e.g. ("PER", "LOC", "ELEMENT", "all"), or ("all",)
    model: tuple[float, ...]  # the trained head, one value per row
    baselines: tuple[tuple[str, tuple[float, ...]], ...]  # (baseline's name, one value per row)
    support: tuple[int, ...]  # held-out units per row: entities, or sentences


def predict_validation(model, loaded, data) -> list:
    """The module's class per validation sentence, or per word (0, "O", where a word has no token)."""
    texts = list(data.validation_texts)
    token = data.info.kind == "token"
    enc = encode_unpadded(loaded, texts, offsets=token)
    device = model.head.weight.device
    pad_id = loaded.tokenizer.pad_token_id or 0
    out = []
    for start in range(0, len(texts), PREDICT_BATCH):
        rows = enc["input_ids"][start:start + PREDICT_BATCH]
        width = max(len(r) for r in rows)
        ids = torch.tensor([r + [pad_id] * (width - len(r)) for r in rows], device=device)  # (B, T)
        mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows], device=device)
        with torch.inference_mode():
            classes = model(input_ids=ids, attention_mask=mask).argmax(-1).cpu().tolist()
        if not token:
            out += classes
            continue
        for i, row in enumerate(classes, start):
            positions = word_positions(enc["offset_mapping"][i], data.validation_spans[i])
            out.append([row[p] if p >= 0 else 0 for p in positions])
    return out


def entity_task_scores(data, predicted) -> TaskScores:
    names = lambda rows: [[ENTITY_LABELS[t] for t in tags] for tags in rows]  # noqa: E731
    gold = names(data.validation_labels)
    head = span_scores(gold, names(predicted))
    lookup = span_scores(gold, lookup_tags(data.train_texts, data.train_labels, data.validation_texts))
    return TaskScores("entity F1 (exact spans)", tuple(s.label for s in head), tuple(s.f1 for s in head),
                      (("lookup of the training names", tuple(s.f1 for s in lookup)),),
                      tuple(s.support for s in head))


def word_list_labels(texts, tie: str) -> list[str]:
    """The word-list baseline: more of the templates' positive adjectives than negative ones
    gives "positive", fewer "negative", as many (none, often) the ``tie`` label."""
    spec = json.loads(SENTIMENT_WORDS.read_text(encoding="utf-8"))
    polar = {w: +1 for w in spec["positive"]} | {w: -1 for w in spec["negative"]}
    out = []
    for text in texts:
        score = sum(polar.get(w.lower(), 0) for w in re.findall(r"[A-Za-z]+", text))
        out.append(tie if score == 0 else "positive" if score > 0 else "negative")
    return out


def sentiment_task_scores(data, predicted) -> TaskScores:
    labels = data.info.labels
    gold = [labels[y] for y in data.validation_labels]
    majority = labels[int(np.bincount(data.train_labels, minlength=len(labels)).argmax())]  # a tie: the first
    accuracy = lambda guesses: sum(g == y for g, y in zip(guesses, gold, strict=True)) / len(gold)  # noqa: E731
    return TaskScores("accuracy", ("all",), (accuracy([labels[p] for p in predicted]),),
                      ((f"majority ({majority})", (accuracy([majority] * len(gold)),)),
                       ("word list", (accuracy(word_list_labels(data.validation_texts, majority)),))),
                      (len(gold),))


_SCORERS = {"entities": entity_task_scores, "sentiment": sentiment_task_scores}


def task_scores(model, loaded, data) -> TaskScores | None:
    """The task's held-out figures beside its baselines (None for a task judged by accuracy alone)."""
    scorer = _SCORERS.get(data.info.name)
    return scorer(data, predict_validation(model, loaded, data)) if scorer else None

