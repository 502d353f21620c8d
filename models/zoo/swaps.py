"""ELECTRA's detector on sentences with one plainly wrong word, as a student types them.

Two sets: ``data/electra_swaps.json`` (sentences written for the project, each with its
swapped word), and held-out sentences of the corpus with one word swapped for a word of
another held-out sentence (``swapped_sentences``). A word's P(replaced) is the highest of
its pieces'; the detector finds the swap when the swapped word ranks first in its sentence.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import torch

WRITTEN = Path(__file__).resolve().parents[2] / "data" / "electra_swaps.json"
WORD = re.compile(r"[A-Za-z]{3,}")


def written_swaps(path: Path = WRITTEN) -> list[dict]:
    """The project's single-swap sentences: [{"text", "swapped", "original"}, ...]."""
    return json.loads(path.read_text(encoding="utf-8"))["items"]


def swapped_sentences(sentences: list[str], seed: int = 1234, limit: int = 0) -> list[dict]:
    """Each sentence (of 5 words or more) with one word of 3+ letters replaced by a word of
    another sentence of the list (a different word): [{"text", "swapped", "original"}, ...]."""
    words = [[m for m in WORD.finditer(s)] for s in sentences]
    return _swapped(sentences, words, [m.group() for ws in words for m in ws], seed, limit)


DETERMINERS = frozenset("the a an his her my their its your our every".split())  # not "that" (a pronoun as often)


def wordnet_nouns(folder: Path) -> frozenset[str]:
    """Single-word lemmas of WordNet's nouns that are not adjectives too (``folder``: WordNet's
    ``usr/share/wordnet``, with ``index.noun`` and ``index.adj``)."""
    def lemmas(pos: str) -> set[str]:
        with open(folder / f"index.{pos}", encoding="latin-1") as fh:
            return {line.split(" ", 1)[0] for line in fh if line[:1].isalpha()}

    return frozenset(w for w in lemmas("noun") - lemmas("adj") if w.isalpha())


def _is_noun(word: str, nouns: frozenset[str]) -> bool:
    w = word.lower()
    return (w in nouns or (w.endswith("s") and w[:-1] in nouns) or (w.endswith("es") and w[:-2] in nouns)
            or (w.endswith("ies") and w[:-3] + "y" in nouns))


def nouns_in(sentence: str, nouns: frozenset[str]) -> list[re.Match]:
    """The sentence's nouns as it uses them: words of ``nouns`` (or their plurals) right after a
    determiner ("the engine", "their books")."""
    found = list(WORD.finditer(sentence))
    return [m for k, m in enumerate(found)
            if k and found[k - 1].group().lower() in DETERMINERS and _is_noun(m.group(), nouns)
            and sentence[found[k - 1].end():m.start()] == " "]


def noun_swaps(sentences: list[str], nouns: frozenset[str], seed: int = 1234, limit: int = 0,
               pool: list[str] | None = None) -> list[dict]:
    """Each sentence (of 5 words or more) with a noun (``nouns_in``) replaced by a noun of
    another sentence of the list (or of ``pool``): the sentence still reads as grammar, its
    meaning plainly wrong ("The cat drank the engine from the saucer."), as a student tests
    a detector. Sentences without such a noun are left out."""
    words = [nouns_in(s, nouns) for s in sentences]
    return _swapped(sentences, words, pool or [m.group() for ws in words for m in ws], seed, limit)


def _swapped(sentences, candidates, pool: list[str], seed: int, limit: int) -> list[dict]:
    """One of each sentence's ``candidates`` (matches) replaced by a word of ``pool``, a
    different word; sentences of under 5 words or without a candidate are left out."""
    rng = np.random.default_rng(seed)
    distinct = {w.lower() for w in pool}
    out = []
    for s, ws in zip(sentences, candidates):
        if len(s.split()) < 5 or not ws:
            continue
        m = ws[int(rng.integers(len(ws)))]
        if len(distinct) < 2 and m.group().lower() in distinct:  # no different word to put in
            continue
        new = pool[int(rng.integers(len(pool)))]
        while new.lower() == m.group().lower():
            new = pool[int(rng.integers(len(pool)))]
        new = new.lower() if m.start() else new.capitalize()
        out.append({"text": s[: m.start()] + new + s[m.end():], "swapped": new, "original": m.group(),
                    "start": m.start()})
        if limit and len(out) == limit:
            break
    return out


def word_scores(tokenizer, discriminator, text: str) -> tuple[list[tuple[int, int]], np.ndarray]:
    """(each word's character span, its P(replaced): the highest of its pieces') of ``text``."""
    enc = tokenizer(text, return_offsets_mapping=True, return_tensors="pt")
    offsets = enc.pop("offset_mapping")[0].tolist()
    with torch.no_grad():
        p = discriminator(**enc).logits[0].float().sigmoid().numpy()
    spans: dict[int, list] = {}
    for pos, w in enumerate(enc.word_ids(0)):
        if w is not None:
            a, b = offsets[pos]
            span = spans.setdefault(w, [a, b, 0.0])
            span[0], span[1], span[2] = min(span[0], a), max(span[1], b), max(span[2], float(p[pos]))
    ordered = [spans[w] for w in sorted(spans)]
    return [(a, b) for a, b, _ in ordered], np.array([s for _, _, s in ordered])


def swap_rank(tokenizer, discriminator, item: dict) -> dict:
    """Where the swapped word ranks among its sentence's words by P(replaced) (1 = first)."""
    spans, scores = word_scores(tokenizer, discriminator, item["text"])
    start = item.get("start")
    if start is None:
        start = re.search(rf"\b{re.escape(item['swapped'])}\b", item["text"]).start()
    k = next(i for i, (a, b) in enumerate(spans) if a <= start < b)
    others = np.delete(scores, k)
    return {"rank": 1 + int((others >= scores[k]).sum()), "p_swapped": float(scores[k]),
            "p_others_max": float(others.max()) if len(others) else 0.0, "words": len(spans),
            "others": others}


def swap_summary(tokenizer, discriminator, items: list[dict]) -> dict:
    """Share of sentences whose swapped word ranks first; the ROC AUC of a word's P(replaced),
    swapped words against every other word; the mean P(replaced) of each; the chance of
    ranking first by a random draw."""
    from .scores import roc_auc

    discriminator.eval()
    rows = [swap_rank(tokenizer, discriminator, it) for it in items]
    others = np.concatenate([r["others"] for r in rows])
    swapped = np.array([r["p_swapped"] for r in rows])
    return {"first": float(np.mean([r["rank"] == 1 for r in rows])), "sentences": len(rows),
            "word_auc": roc_auc(swapped, others), "swapped_mean_p": float(swapped.mean()),
            "other_mean_p": float(others.mean()), "chance_first": float(np.mean([1 / r["words"] for r in rows]))}
