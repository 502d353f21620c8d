"""Sentences for masked-LM training and evaluation: read, tokenise, batch by length, pad."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch


def read_sentences(path: Path) -> list[str]:
    with open(path, encoding="utf-8") as fh:
        return [line.strip() for line in fh if line.strip()]


def encode_sentences(tokenizer, sentences: list[str], max_len: int) -> list[np.ndarray]:
    """Token ids of each sentence with its special tokens, cut to max_len."""
    out = []
    for start in range(0, len(sentences), 4096):
        enc = tokenizer(sentences[start : start + 4096], truncation=True, max_length=max_len)
        out += [np.asarray(ids, dtype=np.int32) for ids in enc["input_ids"]]
    return out


def length_batches(lengths: np.ndarray, batch_size: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Shuffled batches of similar-length sentences (little padding), in random order."""
    order = rng.permutation(len(lengths))
    chunk = batch_size * 50
    batches = []
    for start in range(0, len(order), chunk):
        block = order[start : start + chunk]
        block = block[np.argsort(lengths[block], kind="stable")]
        batches += [block[i : i + batch_size] for i in range(0, len(block), batch_size)]
    rng.shuffle(batches)
    return batches


def collate(seqs: list[np.ndarray], pad_id: int, special_ids: set[int]):
    """(input_ids, attention_mask, special_mask), each (B, T), padded on the right."""
    T = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), T), pad_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.from_numpy(s.astype(np.int64))
    attention = torch.zeros_like(ids)
    for i, s in enumerate(seqs):
        attention[i, : len(s)] = 1
    special = (attention == 0) | torch.isin(ids, torch.tensor(sorted(special_ids)))
    return ids, attention, special

