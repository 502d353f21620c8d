"""How well a fill-mask model guesses: held-out corpus text and everyday cloze sentences."""

from __future__ import annotations

import json
from dataclasses import dataclass

from . import registry
from .errors import InputError
from .loading import load_model
from .pretrain import evaluate_cloze, evaluate_masked, read_sentences

DATA = registry.REPO_ROOT / "data"
SPLITS = ("heldout", "everyday")


@dataclass(frozen=True)
class FillMaskEval:
    """Scores of one model on one split."""

    model_key: str
    split: str
    top1: float  # share of masked tokens (heldout) or sentences (everyday) right at rank 1
    top5: float  # ... with the right answer among the top 5
    loss: float | None  # mean -log p of the true token in nats (heldout only)
    n: int  # masked tokens scored (heldout) or sentences (everyday)


def heldout_sentences() -> list[str]:
    """The fixed held-out split of the corpus (never trained on)."""
    return read_sentences(DATA / "heldout.txt")


def everyday_items() -> list[dict]:
    """The everyday cloze set: sentences with one [MASK] and their acceptable answers."""
    return json.loads((DATA / "everyday_cloze.json").read_text(encoding="utf-8"))["items"]


def evaluate_fill_mask(model_key: str, split: str = "heldout", limit: int | None = None) -> FillMaskEval:
    """Top-1, top-5 and mean loss of a registry MLM.

    split="heldout": 15 % of the tokens of each held-out sentence (seeded, the same for
    every model of a tokenizer) replaced by the mask token, scored at those positions.
    split="everyday": one mask per sentence; a hit when a top-k token is an accepted answer.
    limit: only the first ``limit`` sentences (a quick look).
    """
    if split not in SPLITS:
        raise InputError(f"Unknown split {split!r}; choose one of {', '.join(SPLITS)}.")
    loaded = load_model(model_key, head="mlm")
    if split == "heldout":
        sentences = heldout_sentences()[:limit]
        r = evaluate_masked(loaded.model, loaded.tokenizer, sentences)
        return FillMaskEval(model_key, split, r.top1, r.top5, r.loss, r.n_tokens)
    items = everyday_items()[:limit]
    r1 = evaluate_cloze(loaded.model, loaded.tokenizer, items, k=1)
    r5 = evaluate_cloze(loaded.model, loaded.tokenizer, items, k=5)
    return FillMaskEval(model_key, split, r1["hit_rate"], r5["hit_rate"], None, len(items))
