"""Encoder features for the task heads: every layer's states at once, per unit (a sentence,
or a word's first token), cached so a frozen probe trains in seconds."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..embeddings.pooling import encode_unpadded, forward_layers, pool_hidden
from ..runtime.loading import RESULT_CACHES, ModelCache


@dataclass(frozen=True)
class TaskFeatures:
    """Per split: (L + 1, U, d) float32 states of U units, their labels and sentence numbers."""

    states: dict
    labels: dict  # split -> (U,) int64
    sentence: dict  # split -> (U,) int64: the sentence each unit belongs to
    nbytes: int


FEATURE_CACHE = ModelCache(512 * 2**20, part="task features")
RESULT_CACHES.append(FEATURE_CACHE)


def word_positions(offsets, spans) -> list[int]:
    """The first token of each word span (-1 where the tokenizer kept none of it)."""
    out = []
    for start, end in spans:
        hit = [t for t, (a, b) in enumerate(offsets) if b > a and a < end and b > start]
        out.append(hit[0] if hit else -1)
    return out


def _split_features(loaded, task, split: str, pooling: str):
    texts = getattr(task, f"{split}_texts")
    labels = getattr(task, f"{split}_labels")
    token = task.info.kind == "token"
    enc = encode_unpadded(loaded, texts, offsets=token)
    ids = enc["input_ids"]
    n_layers = int(loaded.model.config.num_hidden_layers)
    layers = list(range(n_layers + 1))
    d = int(loaded.model.config.hidden_size)
    if token:
        spans = getattr(task, f"{split}_spans")
        positions = [word_positions(o, s) for o, s in zip(enc["offset_mapping"], spans)]
        keep = [[(p, y) for p, y in zip(pos, ys) if p >= 0] for pos, ys in zip(positions, labels)]
        unit_labels = np.array([y for k in keep for _, y in k], dtype=np.int64)
        sentence = np.array([i for i, k in enumerate(keep) for _ in k], dtype=np.int64)
        first = np.concatenate([[0], np.cumsum([len(k) for k in keep])])
    else:
        unit_labels = np.asarray(labels, dtype=np.int64)
        sentence = np.arange(len(texts), dtype=np.int64)
    states = np.empty((n_layers + 1, len(unit_labels), d), dtype=np.float32)

    def pool(hidden, mask):  # on the forward's thread (forward_layers' finish)
        return [pool_hidden(h, mask, pooling).cpu().numpy() for h in hidden]

    for batch, hidden, mask in forward_layers(loaded, ids, layers, finish=None if token else pool):
        for layer, h in zip(layers, hidden):
            if token:
                for row, i in enumerate(batch):
                    cols = [p for p, _ in keep[i]]
                    states[layer, first[i]:first[i + 1]] = h[row, cols].float().cpu().numpy()
            else:
                states[layer, batch] = h  # (B, d), pooled
    return states, unit_labels, sentence


def task_features(loaded, task, pooling: str) -> TaskFeatures:
    """Every layer's pooled (or per-word) states of a task's sentences, cached per model,
    task, pooling and device: what a probe is trained on."""
    pooling = "token" if task.info.kind == "token" else pooling
    key = (loaded.spec.key, task.info.name, pooling, str(loaded.device))

    def compute() -> TaskFeatures:
        parts = {s: _split_features(loaded, task, s, pooling) for s in ("train", "validation")}
        return TaskFeatures(
            states={s: p[0] for s, p in parts.items()},
            labels={s: p[1] for s, p in parts.items()},
            sentence={s: p[2] for s, p in parts.items()},
            nbytes=sum(p[0].nbytes for p in parts.values()),
        )

    return FEATURE_CACHE.get(key, compute)
