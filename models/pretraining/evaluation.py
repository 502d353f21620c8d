"""How well a fill-mask model guesses: held-out corpus text and everyday cloze sentences.

The scorers (``evaluate_masked``, ``evaluate_cloze``, ``probe_predictions``, the unigram
baseline) take any model and tokenizer: the trainer calls them during a run, and
``evaluate_fill_mask`` on a registry model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterator

import numpy as np
import torch
import torch.nn.functional as F

from ..errors import InputError
from ..registry import catalogue
from ..runtime.loading import load_model
from ..validation import check_limit
from .masking import MaskingPolicy, apply_masking
from .mlm_data import collate, encode_sentences, read_sentences

DATA = catalogue.REPO_ROOT / "data"
SPLITS = ("heldout", "everyday")


# --- scorers ----------------------------------------------------------------------------


@dataclass(frozen=True)
class EvalResult:
    """Masked-token accuracy on a set of sentences (15 % selected, all replaced by [MASK])."""

    top1: float
    top5: float
    loss: float  # mean -log p(true token) in nats, over the selected positions
    n_tokens: int  # how many masked positions were scored


def _eval_batches(tokenizer, sentences: list[str], *, seed: int, rate: float, batch_size: int,
                  max_len: int) -> Iterator[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """(inputs, attention, labels) batches, a fixed seeded ``rate`` of tokens -> [MASK].

    Every scorer (a model, the unigram baseline) draws the same positions from this.
    """
    generator = torch.Generator().manual_seed(seed)
    policy = MaskingPolicy(rate=rate, mask=1.0, random=0.0, keep=0.0)
    special_ids = set(tokenizer.all_special_ids)
    seqs = encode_sentences(tokenizer, sentences, max_len)
    for start in range(0, len(seqs), batch_size):
        ids, attention, special = collate(seqs[start : start + batch_size], tokenizer.pad_token_id, special_ids)
        inputs, labels, _ = apply_masking(
            ids, special, policy, mask_token_id=tokenizer.mask_token_id,
            vocab_size=len(tokenizer), generator=generator,
        )
        if (labels != -100).any():
            yield inputs, attention, labels


@torch.no_grad()
def evaluate_masked(model, tokenizer, sentences: list[str], *, seed: int = 1234,
                    rate: float = 0.15, batch_size: int = 64, max_len: int = 64) -> EvalResult:
    """Top-1 / top-5 / loss at a fixed, seeded 15 % of positions, all replaced by [MASK]."""
    model.eval()
    device = next(model.parameters()).device
    hits1 = hits5 = n = 0
    total = 0.0
    for inputs, attention, labels in _eval_batches(tokenizer, sentences, seed=seed, rate=rate,
                                                   batch_size=batch_size, max_len=max_len):
        selected = labels != -100
        out = model(input_ids=inputs.to(device), attention_mask=attention.to(device))
        logits = out.logits[selected.to(device)].float()  # (N, V)
        target = labels[selected].to(device)
        top5 = logits.topk(5, dim=-1).indices
        hits1 += int((top5[:, 0] == target).sum())
        hits5 += int((top5 == target[:, None]).any(-1).sum())
        total += float(F.cross_entropy(logits, target, reduction="sum"))
        n += int(selected.sum())
    if n == 0:
        return EvalResult(0.0, 0.0, float("nan"), 0)
    return EvalResult(hits1 / n, hits5 / n, total / n, n)


def unigram_baseline(tokenizer, train: list[str], heldout: list[str], *, seed: int = 1234,
                     rate: float = 0.15, max_len: int = 64) -> EvalResult:
    """Always guess the most frequent training tokens: the floor any MLM must beat."""
    counts = np.zeros(len(tokenizer), dtype=np.int64)
    for seq in encode_sentences(tokenizer, train, max_len):
        np.add.at(counts, seq, 1)
    counts[list(tokenizer.all_special_ids)] = 0
    ranked = np.argsort(-counts)[:5]
    probs = counts / counts.sum()
    hits1 = hits5 = n = 0
    total = 0.0
    for _, _, labels in _eval_batches(tokenizer, heldout, seed=seed, rate=rate, batch_size=64, max_len=max_len):
        target = labels[labels != -100].numpy()
        hits1 += int((target == ranked[0]).sum())
        hits5 += int(np.isin(target, ranked).sum())
        total += float(-np.log(np.maximum(probs[target], 1e-12)).sum())
        n += len(target)
    return EvalResult(hits1 / max(n, 1), hits5 / max(n, 1), total / max(n, 1), n)


@torch.no_grad()
def probe_predictions(model, tokenizer, sentences: list[str], k: int = 5) -> list:
    """Top-k at the first [MASK] of each probe sentence: [(sentence, [(token, p), ...])]."""
    model.eval()
    device = next(model.parameters()).device
    out = []
    for text in sentences:
        enc = tokenizer(text.replace("[MASK]", tokenizer.mask_token), return_tensors="pt").to(device)
        pos = int((enc["input_ids"][0] == tokenizer.mask_token_id).nonzero()[0])
        probs = model(**enc).logits[0, pos].float().softmax(-1)
        p, ids = probs.topk(k)
        out.append((text, [(tokenizer.decode([int(i)]), round(float(v), 4)) for v, i in zip(p, ids)]))
    return out


@torch.no_grad()
def evaluate_cloze(model, tokenizer, items: list[dict], k: int = 5) -> dict:  # noqa: D401
    """Share of everyday cloze sentences whose top-k holds an acceptable answer."""
    rows = []
    for (text, top), item in zip(probe_predictions(model, tokenizer, [i["text"] for i in items], k), items):
        answers = {a.lower() for a in item["answers"]}
        guesses = [t.strip().lower() for t, _ in top]
        rows.append({"text": text, "top": guesses, "hit": any(g in answers for g in guesses)})
    return {"hit_rate": sum(r["hit"] for r in rows) / max(len(rows), 1), "items": rows}



# --- registry models --------------------------------------------------------------------


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
    limit: only the first ``limit`` sentences, a whole number from 1 to the split's size
    (a quick look; None: all). An unknown split or a limit out of range is an ``InputError``.
    """
    if not isinstance(split, str) or split not in SPLITS:
        raise InputError(f"Unknown split {split!r}; choose one of {', '.join(SPLITS)}.")
    loaded = load_model(catalogue.get_spec(model_key), head="mlm")
    if split == "heldout":
        sentences = heldout_sentences()
        sentences = sentences[:check_limit(limit, len(sentences))]
        r = evaluate_masked(loaded.model, loaded.tokenizer, sentences)
        return FillMaskEval(model_key, split, r.top1, r.top5, r.loss, r.n_tokens)
    items = everyday_items()
    items = items[:check_limit(limit, len(items))]
    r1 = evaluate_cloze(loaded.model, loaded.tokenizer, items, k=1)
    r5 = evaluate_cloze(loaded.model, loaded.tokenizer, items, k=5)
    return FillMaskEval(model_key, split, r1["hit_rate"], r5["hit_rate"], None, len(items))
