"""The mini zoo's scores: whole-word accuracy (independent of the tokenizer), the everyday
cloze set, NSP / SOP on held-out pairs, and ELECTRA's replaced-token detection."""

from __future__ import annotations

import re

import numpy as np
import torch
import torch.nn.functional as F

from ..pretraining.masking import apply_masking
from .data import Examples, pad_batch
from .families import DECODERS, Objective, encode, masking_policy, mlm_logits

STORY_PROMPT = "Once upon a time there was a"  # the decoder's record continues it

WORD = re.compile(r"[A-Za-z]+")


def chosen_words(sentences: list[str], seed: int = 1234, rate: float = 0.15) -> list[list[tuple[int, int]]]:
    """The character spans of the words to mask in each sentence: the same for every family.

    Words are runs of letters; ``max(1, round(rate * n))`` of them per sentence, drawn with a
    generator seeded by the sentence's position, so the choice never depends on a tokenizer.
    """
    out = []
    for k, text in enumerate(sentences):
        spans = [m.span() for m in WORD.finditer(text)]
        if not spans:
            out.append([])
            continue
        rng = np.random.default_rng([seed, k])
        n = max(1, round(rate * len(spans)))
        out.append([spans[j] for j in sorted(rng.choice(len(spans), size=n, replace=False))])
    return out


def masked_word_batches(tokenizer, sentences: list[str], words, batch_size: int = 64):
    """(ids, attention, selected, word of each token) per batch: every piece of each chosen word
    selected (``words`` from ``chosen_words``), special tokens never."""
    for start in range(0, len(sentences), batch_size):
        batch = sentences[start : start + batch_size]
        enc = tokenizer(batch, truncation=True, max_length=128, padding=True,
                        return_offsets_mapping=True, return_special_tokens_mask=True, return_tensors="pt")
        ids, attention = enc["input_ids"], enc["attention_mask"]
        offsets, special = enc["offset_mapping"], enc["special_tokens_mask"].bool()
        word_of = torch.full(ids.shape, -1, dtype=torch.long)
        for b, spans in enumerate(words[start : start + batch_size]):
            for w, (s, e) in enumerate(spans):
                hit = (offsets[b, :, 0] < e) & (offsets[b, :, 1] > s) & ~special[b] & attention[b].bool()
                word_of[b][hit & (word_of[b] < 0)] = w
        sel = word_of >= 0
        if sel.any():
            yield ids, attention, sel, word_of


def _words_right(ok: torch.Tensor, ids: torch.Tensor, sel: torch.Tensor, word_of: torch.Tensor) -> tuple[int, int]:
    """(words with every piece right, words) of one batch."""
    key = torch.stack([torch.arange(len(ids))[:, None].expand_as(ids)[sel], word_of[sel]], 1)
    uniq, inverse = torch.unique(key, dim=0, return_inverse=True)
    wrong = torch.zeros(len(uniq), dtype=torch.long).index_add_(0, inverse, (~ok).long())
    return int((wrong == 0).sum()), len(uniq)


@torch.no_grad()
def whole_word_accuracy(family: str, model, tokenizer, sentences: list[str], *, batch_size: int = 64,
                        autocast: str = "", seed: int = 1234) -> dict:
    """Whole-word masking accuracy: every piece of each chosen word -> mask; a word is right
    when every one of its pieces is the model's top-1. Also the mean loss per masked piece."""
    model.eval()
    device = next(model.parameters()).device
    right = total = pieces = 0
    loss_sum = 0.0
    for ids, attention, sel, word_of in masked_word_batches(tokenizer, sentences, chosen_words(sentences, seed=seed),
                                                            batch_size):
        inputs = ids.clone()
        inputs[sel] = tokenizer.mask_token_id
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast == "bf16"):
            hidden, _ = encode(family, model, inputs.to(device), attention.to(device))
            logits = mlm_logits(family, model, hidden[sel.to(device)]).float()
        target = ids[sel].to(device)
        loss_sum += float(F.cross_entropy(logits, target, reduction="sum"))
        pieces += int(sel.sum())
        r, t = _words_right((logits.argmax(-1) == target).cpu(), ids, sel, word_of)
        right, total = right + r, total + t
    return {"word_top1": right / max(total, 1), "words": total,
            "piece_loss": loss_sum / max(pieces, 1), "pieces": pieces}


def next_piece_batches(tokenizer, sentences: list[str], batch_size: int = 64):
    """(ids, attention, targets) per batch: [CLS] sentence [SEP] and, at each position, the
    piece that comes next when it is one of the sentence's own pieces (-100 elsewhere: the
    [SEP], padding). The decoder's held-out task, and the unigram baseline's pieces."""
    for start in range(0, len(sentences), batch_size):
        enc = tokenizer(sentences[start : start + batch_size], truncation=True, max_length=128, padding=True,
                        return_special_tokens_mask=True, return_tensors="pt")
        ids, attention = enc["input_ids"], enc["attention_mask"]
        ordinary = attention.bool() & ~enc["special_tokens_mask"].bool()
        targets = ids[:, 1:].masked_fill(~ordinary[:, 1:], -100)
        yield ids, attention, targets


@torch.no_grad()
def next_piece_scores(family: str, model, tokenizer, sentences: list[str], *, batch_size: int = 64,
                      autocast: str = "") -> dict:
    """A decoder on held-out sentences: the mean loss per piece, each piece predicted from the
    pieces before it (and [CLS]), and how often the next piece is its top-1."""
    model.eval()
    device = next(model.parameters()).device
    loss_sum, right, pieces = 0.0, 0, 0
    for ids, attention, targets in next_piece_batches(tokenizer, sentences, batch_size):
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast == "bf16"):
            hidden, _ = encode(family, model, ids.to(device), attention.to(device))
            sel = (targets != -100).to(device)
            logits = mlm_logits(family, model, hidden[:, :-1][sel]).float()
        target = targets[targets != -100].to(device)
        loss_sum += float(F.cross_entropy(logits, target, reduction="sum"))
        right += int((logits.argmax(-1) == target).sum())
        pieces += len(target)
    return {"piece_loss": loss_sum / max(pieces, 1), "piece_top1": right / max(pieces, 1), "pieces": pieces}


def unigram_next_piece(tokenizer, counts: np.ndarray, sentences: list[str]) -> dict:
    """The word-frequency predictor on ``next_piece_scores``' pieces: each piece guessed from the
    training split's piece counts alone (add-one smoothed), whatever came before it."""
    logp = np.log((counts.astype(np.float64) + 1.0) / (counts.sum() + len(counts)))
    best = int(np.argmax(counts))
    target = torch.cat([t[t != -100] for _, _, t in next_piece_batches(tokenizer, sentences)]).numpy()
    return {"piece_loss": float(-logp[target].mean()), "piece_top1": float((target == best).mean()),
            "pieces": int(len(target)), "top_guess": tokenizer.convert_ids_to_tokens(best)}


def unigram_baseline(tokenizer, counts: np.ndarray, sentences: list[str], *, seed: int = 1234) -> dict:
    """The word-frequency predictor on the same masked words as ``whole_word_accuracy``: every
    piece guessed from the training split's piece counts alone (add-one smoothed), whatever its
    context. Its loss per piece is the cross-entropy a model has before it uses any context."""
    probs = (counts.astype(np.float64) + 1.0) / (counts.sum() + len(counts))
    logp = torch.from_numpy(np.log(probs))
    best = int(np.argmax(counts))
    right = total = pieces = 0
    loss_sum = 0.0
    for ids, _attention, sel, word_of in masked_word_batches(tokenizer, sentences, chosen_words(sentences, seed=seed)):
        target = ids[sel]
        loss_sum += float(-logp[target].sum())
        pieces += int(sel.sum())
        r, t = _words_right(target == best, ids, sel, word_of)
        right, total = right + r, total + t
    return {"word_top1": right / max(total, 1), "words": total, "piece_loss": loss_sum / max(pieces, 1),
            "pieces": pieces, "top_guess": tokenizer.convert_ids_to_tokens(best)}


PIECE_COUNTS = "piece_counts.npy"  # a decoder's shipped folder: its training chunks' piece counts


def piece_counts(chunks, vocab_size: int) -> np.ndarray:
    """How often each piece occurs in the training chunks (the unigram baseline's counts)."""
    from .data import is_pair_eval_chunk

    flat = [seq for i, chunk in enumerate(chunks) if not is_pair_eval_chunk(i) for seq in chunk]
    return np.bincount(np.concatenate(flat), minlength=vocab_size) if flat else np.zeros(vocab_size, np.int64)


@torch.no_grad()
def cloze_hits(family: str, model, tokenizer, items: list[dict], k: int = 5) -> dict:
    """The everyday cloze set: a hit when one of the top-k tokens at the mask is an answer."""
    model.eval()
    hits, rows = 0, []
    for item in items:
        enc = tokenizer(item["text"].replace("[MASK]", tokenizer.mask_token), return_tensors="pt")
        pos = int((enc["input_ids"][0] == tokenizer.mask_token_id).nonzero()[0])
        hidden, _ = encode(family, model, enc["input_ids"], enc["attention_mask"])
        top = mlm_logits(family, model, hidden[0, pos : pos + 1]).float()[0].topk(k).indices
        guesses = [tokenizer.decode([int(t)]).strip().lower() for t in top]
        hit = any(g in {a.lower() for a in item["answers"]} for g in guesses)
        hits += hit
        rows.append({"text": item["text"], "top": guesses, "hit": hit})
    return {"hit_rate": hits / max(len(items), 1), "items": rows}


@torch.no_grad()
def pair_accuracy(objective: Objective, examples: Examples, kind: str, seed: int = 1234,
                  chunks: list[int] | None = None) -> dict:
    """NSP or SOP accuracy on the held-out chunks (never trained on; ``chunks``: these of them)."""
    model, fam = objective.model, objective.family
    model.eval()
    rng = np.random.default_rng(seed)
    rows, types, labels = [], [], []
    for i in examples.eval_idx if chunks is None else chunks:
        ids, tt, label = examples.pair(i, rng, kind)
        rows.append(ids), types.append(tt), labels.append(label)
    right = 0
    head = model.cls.seq_relationship if fam == "mini-bert" else model.sop_classifier
    for start in range(0, len(rows), 64):
        ids, tt, attention = pad_batch(rows[start : start + 64], types[start : start + 64], examples.pad)
        _, pooled = encode(fam, model, ids, attention, tt)
        pred = head(pooled).argmax(-1)
        right += int((pred == torch.tensor(labels[start : start + 64])).sum())
    return {"accuracy": right / max(len(rows), 1), "pairs": len(rows),
            "majority": max(np.mean(labels), 1 - np.mean(labels))}


@torch.no_grad()
def rtd_scores(objective: Objective, examples: Examples, seed: int = 1234) -> dict:
    """ELECTRA: the discriminator on generator-corrupted held-out chunks."""
    gen, disc = objective.generator, objective.model
    gen.eval(), disc.eval()
    g = torch.Generator().manual_seed(seed)
    probs, replaced_at, rewritten_at = [], [], []
    policy = masking_policy("mini-electra")
    rows = [examples.packed(i) for i in examples.eval_idx]
    if not rows:  # a corpus too small to hold out any chunk (tests)
        return {"roc_auc": float("nan"), "replaced": 0, "original": 0}
    for start in range(0, len(rows), 64):
        ids, tt, attention = pad_batch([r[0] for r in rows[start : start + 64]],
                                       [r[1] for r in rows[start : start + 64]], examples.pad)
        special = (attention == 0) | (ids == examples.cls) | (ids == examples.sep)
        inputs, labels, _ = apply_masking(ids, special, policy, mask_token_id=examples.tok.mask_token_id,
                                          vocab_size=len(examples.tok), generator=g)
        sel = labels != -100
        hidden, _ = encode("mini-electra", gen, inputs, attention)
        logits = mlm_logits("mini-electra", gen, hidden[sel]).float()
        corrupted = ids.clone()
        corrupted[sel] = torch.multinomial(logits.softmax(-1), 1, generator=g).squeeze(-1)
        hidden_d, _ = encode("mini-electra", disc, corrupted, attention)
        prob = disc.discriminator_predictions(hidden_d).float().sigmoid()
        real = attention.bool() & ~special
        probs.append(prob[real]), replaced_at.append((corrupted != ids)[real]), rewritten_at.append(sel[real])
    return rtd_summary(torch.cat(probs).numpy(), torch.cat(replaced_at).numpy(), torch.cat(rewritten_at).numpy())


def rtd_summary(prob: np.ndarray, replaced: np.ndarray, rewritten: np.ndarray) -> dict:
    """P(replaced) of every real token, whether it was replaced, and whether the generator wrote
    there (a selected position: replaced, or sampled back to the original) -> the detection
    figures. ``roc_auc``: replaced against every original token (ELECTRA's task). Read apart:
    ``rewritten_auc``, among the positions the generator wrote, replaced against correctly
    guessed; ``untouched_auc``, replaced against tokens the generator never saw;
    ``where_auc``, written positions against untouched ones (does it find where it wrote?)."""
    prob, replaced, rewritten = (np.asarray(x) for x in (prob, replaced, rewritten))
    replaced, rewritten = replaced.astype(bool), rewritten.astype(bool)
    rep, orig = prob[replaced], prob[~replaced]
    return {"roc_auc": roc_auc(rep, orig),
            "rewritten_auc": roc_auc(rep, prob[rewritten & ~replaced]),
            "untouched_auc": roc_auc(rep, prob[~rewritten]),
            "where_auc": roc_auc(prob[rewritten], prob[~rewritten]),
            "replaced_mean_p": float(rep.mean()), "original_mean_p": float(orig.mean()),
            "replaced_recall": float((rep > 0.5).mean()),
            "original_specificity": float((orig <= 0.5).mean()),
            "replaced": int(len(rep)), "original": int(len(orig)),
            "rewritten_original": int((rewritten & ~replaced).sum())}


def final_scores(family: str, objective: Objective, tokenizer, examples: Examples, heldout: list[str],
                 cloze: list[dict], autocast: str = "") -> dict:
    """A trained family's record entries: held-out whole words, the everyday cloze, NSP / SOP
    on held-out pairs, ELECTRA's detection, and the parameter counts."""
    if family in DECODERS:
        return decoder_scores(family, objective, tokenizer, heldout, autocast)
    mlm_model = objective.generator if family == "mini-electra" else objective.model
    out = {"heldout": whole_word_accuracy(family, mlm_model, tokenizer, heldout, autocast=autocast)}
    objective.cpu()
    out["everyday"] = cloze_hits(family, mlm_model, tokenizer, cloze)
    if family in ("mini-bert", "mini-albert"):
        out["pair_heldout"] = pair_accuracy(objective, examples, "nsp" if family == "mini-bert" else "sop")
    if family == "mini-electra":
        out["rtd_heldout"] = rtd_scores(objective, examples)
    out["parameters"] = {name: sum(p.numel() for p in m.parameters())
                         for name, m in (("model", objective.model), ("generator", objective.generator))
                         if m is not None}
    return out


def decoder_scores(family: str, objective: Objective, tokenizer, heldout: list[str], autocast: str = "") -> dict:
    """A trained decoder's record entries: held-out next-piece loss, continuations of
    ``STORY_PROMPT`` (greedy and three samples), the parameter count."""
    model = objective.model
    out = {"heldout": next_piece_scores(family, model, tokenizer, heldout, autocast=autocast)}
    objective.cpu()
    out["story"] = {"prompt": STORY_PROMPT, "greedy": continue_text(family, model, tokenizer, STORY_PROMPT),
                    "sampled": [continue_text(family, model, tokenizer, STORY_PROMPT, seed=k) for k in range(3)],
                    "sampling": "softmax at temperature 1 over the 40 likeliest pieces, seeds 0-2; 16 pieces"}
    out["parameters"] = {"model": sum(p.numel() for p in model.parameters())}
    return out


@torch.no_grad()
def continue_text(family: str, model, tokenizer, prompt: str, pieces: int = 16, seed: int | None = None,
                  top_k: int = 40) -> str:
    """``prompt`` continued piece by piece ([CLS] first, as in training): the likeliest piece
    each time, or (``seed``) a draw from the ``top_k`` likeliest; stops at [SEP]."""
    model.eval()
    ids = [tokenizer.cls_token_id] + tokenizer(prompt, add_special_tokens=False)["input_ids"]
    start, gen = len(ids), torch.Generator().manual_seed(seed) if seed is not None else None
    for _ in range(pieces):
        x = torch.tensor([ids])
        hidden, _ = encode(family, model, x, torch.ones_like(x))
        logits = mlm_logits(family, model, hidden[0, -1:]).float()[0]
        if gen is None:
            nxt = int(logits.argmax())
        else:
            top = logits.topk(top_k)
            nxt = int(top.indices[torch.multinomial(top.values.softmax(-1), 1, generator=gen)])
        if nxt == tokenizer.sep_token_id:
            break
        ids.append(nxt)
    return tokenizer.decode(ids[start:])


def roc_auc(positive: np.ndarray, negative: np.ndarray) -> float:
    """ROC AUC: the chance that a random positive scores above a random negative (ties count
    half), from the ranks of the pooled scores (Mann-Whitney U)."""
    positive, negative = np.asarray(positive, np.float64), np.asarray(negative, np.float64)
    if not len(positive) or not len(negative):
        return float("nan")
    scores = np.concatenate([positive, negative])
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    sorted_scores = scores[order]
    # average ranks over ties
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_scores)) + 1]
    ends = np.r_[starts[1:], len(scores)]
    for a, b in zip(starts, ends):
        ranks[order[a:b]] = (a + b + 1) / 2.0
    u = ranks[: len(positive)].sum() - len(positive) * (len(positive) + 1) / 2.0
    return float(u / (len(positive) * len(negative)))
