"""How faithful each attribution method is over many sentences, not one.

A fixed, seeded set of cloze sentences from the held-out split (``data/heldout.txt``, never
trained on), one word masked in each; for each method the deletion curve's area (random
minus attributed) per sentence, its mean, and how often the method beats random.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..pretraining.evaluation import heldout_sentences
from ..validation import check_int
from .masked_guess import ATTRIBUTION_METHODS, DEFAULT_IG_STEPS, deletion_curve

_WORD = re.compile(r"[A-Za-z]{3,}")
MAX_FAITHFULNESS_TEXTS = 200


@dataclass(frozen=True)
class MethodFaithfulness:
    """One method's deletion-curve areas over a set of texts."""

    method: str
    areas: tuple[float, ...]  # per text: area between the random and attributed curves
    mean_area: float
    beats_random: float  # share of texts with an area > 0


def heldout_cloze(n: int = 40, seed: int = 0, min_words: int = 8, max_words: int = 24) -> list[str]:
    """``n`` held-out sentences of ``min_words``..``max_words`` words, one word masked each.

    Seeded: the same sentences and the same masked word every time. The masked word is a
    run of at least three letters, never the first word (so the mask has context both sides).
    """
    n = check_int(n, "n", 1, MAX_FAITHFULNESS_TEXTS)
    rng = random.Random(seed)
    pool = [s for s in heldout_sentences() if min_words <= len(s.split()) <= max_words]
    texts = []
    for sentence in rng.sample(pool, len(pool)):
        words = list(_WORD.finditer(sentence))[1:]
        if not words:
            continue
        word = rng.choice(words)
        texts.append(sentence[: word.start()] + "[MASK]" + sentence[word.end():])
        if len(texts) == n:
            break
    return texts


def measure_faithfulness(
    model_key: str,
    texts: list[str],
    methods: tuple[str, ...] = ATTRIBUTION_METHODS,
    n_steps: int = DEFAULT_IG_STEPS,
) -> tuple[MethodFaithfulness, ...]:
    """Each method's deletion-curve areas on ``texts`` (the top guess at the first mask)."""
    if not texts or len(texts) > MAX_FAITHFULNESS_TEXTS:
        raise InputError(f"Give between 1 and {MAX_FAITHFULNESS_TEXTS} texts.")
    out = []
    for method in methods:
        areas = [deletion_curve(model_key, text, method, n_steps=n_steps).area for text in texts]
        out.append(MethodFaithfulness(
            method=method,
            areas=tuple(areas),
            mean_area=float(np.mean(areas)),
            beats_random=float(np.mean([a > 0 for a in areas])),
        ))
    return tuple(out)
