"""How well a similarity matrix separates groups: within- vs across-group cosine, ROC AUC.

The Embeddings tab scores each pooling with these: sentences in the same group (e.g.
paraphrases) should be closer to each other than to the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..errors import InputError
from ..validation import check_array


@dataclass(frozen=True)
class SeparationScore:
    """How well a similarity matrix tells same-group pairs from different-group pairs."""

    within: float  # mean cosine over pairs of the same group (e.g. paraphrases)
    across: float  # mean cosine over pairs of different groups
    gap: float  # within - across
    auc: float  # ROC AUC: P(a same-group pair scores above a different-group pair), ties 1/2
    same_pairs: int
    different_pairs: int
    same_topic: float | None = None  # mean over different groups of the same topic, if known
    unrelated: float | None = None  # mean over pairs of different topics, if topics are known
    auc_unrelated: float | None = None  # same-group vs different-topic pairs only


def roc_auc(positive: np.ndarray, negative: np.ndarray) -> float:
    """ROC AUC = P(a positive scores above a negative), ties counted 1/2 (Mann-Whitney)."""
    positive, negative = np.asarray(positive, float), np.asarray(negative, float)
    if not len(positive) or not len(negative):
        raise InputError("The AUC needs at least one same-group pair and one different-group pair.")
    scores = np.concatenate([positive, negative])
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    # Ties share the mean of their ranks.
    unique, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    if len(unique) < len(scores):
        ranks = (np.bincount(inverse, weights=ranks) / counts)[inverse]
    n_pos, n_neg = len(positive), len(negative)
    return float((ranks[:n_pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def separation_score(matrix: np.ndarray, groups: Sequence, topics: Sequence | None = None) -> SeparationScore:
    """How well a similarity matrix separates same-group pairs from the others.

    groups: a label per sentence (e.g. the paraphrase set it belongs to). topics: an
    optional label per sentence; then the different-group pairs are split into same-topic
    and unrelated ones.
    """
    matrix = check_array(matrix, "The similarity matrix")
    n = matrix.shape[0] if matrix.ndim else 0
    if (matrix.shape != (n, n) or not hasattr(groups, "__len__") or len(groups) != n
            or (topics is not None and (not hasattr(topics, "__len__") or len(topics) != n))):
        raise InputError("The matrix must be square with one group (and topic) label per sentence.")
    i, j = np.triu_indices(n, k=1)
    groups = np.asarray(groups, dtype=object)
    same = groups[i] == groups[j]
    if not same.any() or same.all():
        raise InputError(
            "A separation score needs at least one group of two or more sentences and at least "
            "two groups: separate the groups by a blank line."
        )
    values = matrix[i, j]
    score = dict(
        within=float(values[same].mean()),
        across=float(values[~same].mean()),
        auc=roc_auc(values[same], values[~same]),
        same_pairs=int(same.sum()),
        different_pairs=int((~same).sum()),
    )
    if topics is not None:
        topics = np.asarray(topics, dtype=object)
        same_topic = ~same & (topics[i] == topics[j])
        unrelated = ~same & (topics[i] != topics[j])
        if same_topic.any():
            score["same_topic"] = float(values[same_topic].mean())
        if unrelated.any():
            score["unrelated"] = float(values[unrelated].mean())
            score["auc_unrelated"] = roc_auc(values[same], values[unrelated])
    return SeparationScore(gap=score["within"] - score["across"], **score)


def best_pooling(scores: dict[str, SeparationScore]) -> str:
    """The pooling whose scores separate the groups best: highest ROC AUC, then largest gap.

    scores: pooling name -> its ``separation_score`` (at least one)."""
    if not isinstance(scores, dict) or not scores or not all(isinstance(s, SeparationScore) for s in scores.values()):
        raise InputError("best_pooling needs a dict of at least one pooling name -> its separation_score result.")
    return max(scores, key=lambda p: (round(scores[p].auc, 3), scores[p].gap))
