"""The mini zoo's training data: consecutive sentences of one source packed into chunks,
and each family's examples made from them (packed full sentences, NSP or SOP pairs)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import torch


def read_ordered(path: Path) -> tuple[list[str], list[str]]:
    """(sources, sentences) of ``train_ordered.tsv``, in reading order."""
    sources, sentences = [], []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            src, _, text = line.rstrip("\n").partition("\t")
            if text:
                sources.append(src)
                sentences.append(text)
    return sources, sentences


def make_chunks(sources: list[str], ids: list[list[int]], max_tokens: int) -> list[list[np.ndarray]]:
    """Runs of consecutive sentences of one source, up to ``max_tokens`` tokens each."""
    chunks, current, length, source = [], [], 0, None
    for src, seq in zip(sources, ids):
        seq = np.asarray(seq[:max_tokens], dtype=np.int64)
        if current and (src != source or length + len(seq) > max_tokens):
            chunks.append(current)
            current, length = [], 0
        current.append(seq)
        length += len(seq)
        source = src
    if current:
        chunks.append(current)
    return chunks


def is_pair_eval_chunk(index: int) -> bool:
    """2 % of chunks are never trained on: the NSP / SOP held-out pairs."""
    return int(hashlib.sha1(f"pair-eval:{index}".encode()).hexdigest(), 16) % 100 < 2


class Examples:
    """Training sequences for one family from its tokenizer's chunks."""

    def __init__(self, tokenizer, chunks: list[list[np.ndarray]], max_len: int, seed: int):
        self.tok, self.max_len, self.seed = tokenizer, max_len, seed
        self.cls, self.sep, self.pad = tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id
        self.train_idx = [i for i in range(len(chunks)) if not is_pair_eval_chunk(i)]
        self.eval_idx = [i for i in range(len(chunks)) if is_pair_eval_chunk(i)]
        self.chunks = chunks

    def packed(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """[CLS] sentences... [SEP]: full sentences, packed (RoBERTa's FULL-SENTENCES)."""
        body = np.concatenate(self.chunks[i])[: self.max_len - 2]
        ids = np.concatenate([[self.cls], body, [self.sep]])
        return ids, np.zeros_like(ids)

    def pair(self, i: int, rng: np.random.Generator, kind: str) -> tuple[np.ndarray, np.ndarray, int]:
        """[CLS] A [SEP] B [SEP] and its label: NSP (1 = B is random) or SOP (1 = swapped)."""
        chunk = self.chunks[i]
        if len(chunk) >= 2:
            cut = int(rng.integers(1, len(chunk)))
            a, b = np.concatenate(chunk[:cut]), np.concatenate(chunk[cut:])
        else:  # one long sentence: cut it in two
            seq = chunk[0]
            cut = max(1, len(seq) // 2)
            a, b = seq[:cut], seq[cut:]
        label = int(rng.random() < 0.5)
        if label and kind == "nsp":
            other = self.train_idx[int(rng.integers(len(self.train_idx)))]
            if other == i:
                other = self.train_idx[(self.train_idx.index(i) + 1) % len(self.train_idx)]
            b = np.concatenate(self.chunks[other])[: max(len(b), 8)]
        elif label and kind == "sop":
            a, b = b, a
        room = self.max_len - 3
        while len(a) + len(b) > room:  # trim the longer side, as BERT's data builder does
            if len(a) >= len(b):
                a = a[:-1]
            else:
                b = b[:-1]
        ids = np.concatenate([[self.cls], a, [self.sep], b, [self.sep]])
        types = np.concatenate([np.zeros(len(a) + 2, np.int64), np.ones(len(b) + 1, np.int64)])
        return ids, types, label


def pad_batch(rows: list[np.ndarray], types: list[np.ndarray], pad_id: int):
    T = max(len(r) for r in rows)
    ids = torch.full((len(rows), T), pad_id, dtype=torch.long)
    tt = torch.zeros((len(rows), T), dtype=torch.long)
    attention = torch.zeros((len(rows), T), dtype=torch.long)
    for k, (r, t) in enumerate(zip(rows, types)):
        ids[k, : len(r)] = torch.from_numpy(r)
        tt[k, : len(t)] = torch.from_numpy(t)
        attention[k, : len(r)] = 1
    return ids, tt, attention
