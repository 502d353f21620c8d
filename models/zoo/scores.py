"""The mini zoo's scores: whole-word accuracy (independent of the tokenizer), the everyday
cloze set, NSP / SOP on held-out pairs, and ELECTRA's replaced-token detection."""

from __future__ import annotations

import re

import numpy as np
import torch
import torch.nn.functional as F

from ..pretraining.masking import apply_masking
from .data import Examples, pad_batch
from .families import Objective, encode, masking_policy, mlm_logits

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


@torch.no_grad()
def whole_word_accuracy(family: str, model, tokenizer, sentences: list[str], *, batch_size: int = 64,
                        autocast: str = "", seed: int = 1234) -> dict:
    """Whole-word masking accuracy: every piece of each chosen word -> mask; a word is right
    when every one of its pieces is the model's top-1. Also the mean loss per masked piece."""
    model.eval()
    words = chosen_words(sentences, seed=seed)
    device = next(model.parameters()).device
    right = total = pieces = 0
    loss_sum = 0.0
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
        if not sel.any():
            continue
        inputs = ids.clone()
        inputs[sel] = tokenizer.mask_token_id
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast == "bf16"):
            hidden, _ = encode(family, model, inputs.to(device), attention.to(device))
            logits = mlm_logits(family, model, hidden[sel.to(device)]).float()
        target = ids[sel].to(device)
        loss_sum += float(F.cross_entropy(logits, target, reduction="sum"))
        pieces += int(sel.sum())
        ok = (logits.argmax(-1) == target).cpu()
        key = torch.stack([torch.arange(len(ids))[:, None].expand_as(ids)[sel], word_of[sel]], 1)
        uniq, inverse = torch.unique(key, dim=0, return_inverse=True)
        wrong = torch.zeros(len(uniq), dtype=torch.long).index_add_(0, inverse, (~ok).long())
        right += int((wrong == 0).sum())
        total += len(uniq)
    return {"word_top1": right / max(total, 1), "words": total,
            "piece_loss": loss_sum / max(pieces, 1), "pieces": pieces}


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
def pair_accuracy(objective: Objective, examples: Examples, kind: str, seed: int = 1234) -> dict:
    """NSP or SOP accuracy on the held-out chunks (never trained on)."""
    model, fam = objective.model, objective.family
    model.eval()
    rng = np.random.default_rng(seed)
    rows, types, labels = [], [], []
    for i in examples.eval_idx:
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
    p_rep, p_orig = [], []
    policy = masking_policy("mini-electra")
    rows = [examples.packed(i) for i in examples.eval_idx]
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
        replaced = (corrupted != ids) & real
        p_rep.append(prob[replaced]), p_orig.append(prob[real & ~replaced])
    rep, orig = torch.cat(p_rep), torch.cat(p_orig)
    return {"replaced_mean_p": float(rep.mean()), "original_mean_p": float(orig.mean()),
            "replaced_recall": float((rep > 0.5).float().mean()),
            "original_specificity": float((orig <= 0.5).float().mean()),
            "replaced": len(rep), "original": len(orig)}
