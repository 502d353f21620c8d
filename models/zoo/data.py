"""The mini zoo's training data: consecutive sentences of one source packed into chunks,
and each family's examples made from them (packed full sentences, NSP or SOP pairs)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import torch

HELDOUT = Path(__file__).resolve().parents[2] / "data" / "heldout.txt"  # the corpus's held-out split
TUNING_SENTENCES = 400  # its last lines: the zoo's tuning split (scores use the rest)


def heldout_splits(limit: int = 0, path: Path = HELDOUT) -> tuple[list[str], list[str]]:
    """(tuning split, score split) of ``data/heldout.txt``: never trained on; the zoo's
    search chooses on the first, the cards report the second."""
    lines = [s for s in path.read_text(encoding="utf-8").splitlines() if s]
    tune, score = lines[-TUNING_SENTENCES:], lines[:-TUNING_SENTENCES]
    if limit:
        tune, score = tune[:limit], score[:limit]
    return tune, score


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


def make_chunks(sources: list[str], ids: list[list[int]], max_tokens: int,
                names: list[str] | None = None) -> list[list[np.ndarray]]:
    """Runs of consecutive sentences of one source, up to ``max_tokens`` tokens each.
    ``names``: a list that gets each chunk's source name appended, in the chunks' order."""
    chunks, current, length, source = [], [], 0, None

    def close():
        chunks.append(current)
        if names is not None:
            names.append(source)

    for src, seq in zip(sources, ids):
        seq = np.asarray(seq[:max_tokens], dtype=np.int64)
        if current and (src != source or length + len(seq) > max_tokens):
            close()
            current, length = [], 0
        current.append(seq)
        length += len(seq)
        source = src
    if current:
        close()
    return chunks


def corpus_chunks(path: Path, tokenizer, max_len: int, limit: int = 0, *, names: list[str] | None = None,
                  counts: dict | None = None) -> list[list[np.ndarray]]:
    """``train_ordered.tsv`` (its first ``limit`` lines when given) tokenized without specials
    and cut into chunks with room for a pair's three specials in ``max_len`` tokens.

    ``names``: as ``make_chunks``'s. ``counts``, when given, receives the corpus's ``sentences``
    and their ``tokens``, every sentence whole (``make_chunks`` keeps the first ``max_len - 3``
    of a longer one)."""
    sources, sentences = read_ordered(path)
    if limit:
        sources, sentences = sources[:limit], sentences[:limit]
    ids = tokenizer(sentences, add_special_tokens=False)["input_ids"]
    if counts is not None:
        counts.update(sentences=len(ids), tokens=sum(len(x) for x in ids))
    return make_chunks(sources, ids, max_len - 3, names)


def is_pair_eval_chunk(index: int) -> bool:
    """2 % of chunks are never trained on: the NSP / SOP held-out pairs."""
    return int(hashlib.sha1(f"pair-eval:{index}".encode()).hexdigest(), 16) % 100 < 2


# How a training NSP pair is built: "any" (BERT's draw: A the chunk's first sentences, B the
# rest, a negative's B the opening of any other training chunk cut to the positive B's length;
# here mostly another kind of text, and seldom ending a sentence) or "same-source"
# (``Examples.same_source_pair``: A and B runs of whole sentences, half of the pairs one sentence
# each, a negative's B as many whole sentences of another place in the same source).
NSP_NEGATIVES = ("any", "same-source")
SHORT_PAIRS = 0.5  # "same-source": the share of pairs of one sentence each (a student's pair)


class Examples:
    """Training sequences for one family from its tokenizer's chunks."""

    def __init__(self, tokenizer, chunks: list[list[np.ndarray]], max_len: int, seed: int, *,
                 sources: list[str] | None = None, nsp_negatives: str = "any"):
        """``sources``: each chunk's source name (``corpus_chunks(names=...)``), needed by
        ``nsp_negatives="same-source"``; ``nsp_negatives``: see ``NSP_NEGATIVES``."""
        if nsp_negatives not in NSP_NEGATIVES:
            raise ValueError(f"Unknown nsp_negatives {nsp_negatives!r}; choose one of {', '.join(NSP_NEGATIVES)}.")
        if nsp_negatives == "same-source" and (sources is None or len(sources) != len(chunks)):
            raise ValueError("nsp_negatives='same-source' needs each chunk's source (sources=)")
        self.tok, self.max_len, self.seed = tokenizer, max_len, seed
        self.cls, self.sep, self.pad = tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id
        self.train_idx = [i for i in range(len(chunks)) if not is_pair_eval_chunk(i)]
        self.eval_idx = [i for i in range(len(chunks)) if is_pair_eval_chunk(i)]
        self.chunks, self.sources, self.nsp_negatives = chunks, sources, nsp_negatives
        self.by_source: dict[str, list[int]] = {}
        for i in self.train_idx if sources is not None else ():
            self.by_source.setdefault(sources[i], []).append(i)

    def packed(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """[CLS] sentences... [SEP]: full sentences, packed (RoBERTa's FULL-SENTENCES)."""
        body = np.concatenate(self.chunks[i])[: self.max_len - 2]
        ids = np.concatenate([[self.cls], body, [self.sep]])
        return ids, np.zeros_like(ids)

    def pair(self, i: int, rng: np.random.Generator, kind: str) -> tuple[np.ndarray, np.ndarray, int]:
        """[CLS] A [SEP] B [SEP] and its label: NSP (1 = B is random) or SOP (1 = swapped)."""
        chunk = self.chunks[i]
        if kind == "nsp" and self.nsp_negatives == "same-source" and len(chunk) >= 2:
            return self.same_source_pair(i, rng)
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
        return (*self.join(a, b), label)

    def same_source_pair(self, i: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, int]:
        """An NSP pair of chunk ``i`` (two sentences or more) whose only difference between the
        labels is the story. A and B are runs of whole sentences around a cut: with probability
        ``SHORT_PAIRS`` one sentence each (the sentence before the cut and the one after), else
        from a random sentence before the cut to a random one after it, so a positive pair's
        length varies as a negative's does. A negative's B (label 1) is as many whole sentences
        of another training chunk of the same source (``same_source_b``): both kinds of B end a
        sentence and are drawn alike, so neither where B stops nor how long the pair is tells
        the labels apart."""
        chunk = self.chunks[i]
        cut = int(rng.integers(1, len(chunk)))
        if rng.random() < SHORT_PAIRS:
            first, last = cut - 1, cut + 1
        else:
            first, last = int(rng.integers(0, cut)), int(rng.integers(cut + 1, len(chunk) + 1))
        a, b = np.concatenate(chunk[first:cut]), chunk[cut:last]
        label = int(rng.random() < 0.5)
        if label:
            b = self.same_source_b(i, rng, len(b), self.max_len - 3 - len(a))
        return (*self.join(a, np.concatenate(b)), label)

    def same_source_b(self, i: int, rng: np.random.Generator, count: int, room: int) -> list[np.ndarray]:
        """A negative B of the same kind of text as chunk ``i``: ``count`` consecutive whole
        sentences of another training chunk of its source (any other chunk where the source has
        no other), from a random start where that chunk has as many (else all of it), the last
        ones dropped while they pass ``room`` tokens (one kept at least)."""
        pool = self.by_source.get(self.sources[i], [])
        pool = pool if set(pool) - {i} else self.train_idx
        other = pool[int(rng.integers(len(pool)))]
        if other == i:
            other = pool[(pool.index(i) + 1) % len(pool)]
        return whole_sentences(self.chunks[other], count, room, rng)

    def join(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """[CLS] A [SEP] B [SEP] and its token types, the longer side trimmed to fit ``max_len``."""
        room = self.max_len - 3
        while len(a) + len(b) > room:  # trim the longer side, as BERT's data builder does
            if len(a) >= len(b):
                a = a[:-1]
            else:
                b = b[:-1]
        ids = np.concatenate([[self.cls], a, [self.sep], b, [self.sep]])
        types = np.concatenate([np.zeros(len(a) + 2, np.int64), np.ones(len(b) + 1, np.int64)])
        return ids, types


def whole_sentences(chunk: list[np.ndarray], count: int, room: int, rng: np.random.Generator) -> list[np.ndarray]:
    """``count`` consecutive sentences of ``chunk`` from a random start (all of it when it has
    fewer), the last ones dropped while together they pass ``room`` tokens (one kept at least)."""
    start = int(rng.integers(0, max(1, len(chunk) - count + 1)))
    taken = list(chunk[start : start + count])
    while len(taken) > 1 and sum(len(x) for x in taken) > room:
        taken.pop()
    return taken


def pad_batch(rows: list[np.ndarray], types: list[np.ndarray], pad_id: int):
    T = max(len(r) for r in rows)
    ids = np.full((len(rows), T), pad_id, dtype=np.int64)
    tt = np.zeros((len(rows), T), dtype=np.int64)
    attention = np.zeros((len(rows), T), dtype=np.int64)
    for k, (r, t) in enumerate(zip(rows, types)):
        ids[k, : len(r)] = r
        tt[k, : len(t)] = t
        attention[k, : len(r)] = 1
    return torch.from_numpy(ids), torch.from_numpy(tt), torch.from_numpy(attention)


_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a well-mixed 64-bit hash of each uint64 (counter-based randomness)."""
    with np.errstate(over="ignore"):
        x = (x + np.uint64(0x9E3779B97F4A7C15)) & _MASK64
        x = ((x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)) & _MASK64
        x = ((x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)) & _MASK64
        return x ^ (x >> np.uint64(31))


def static_masking(ids: torch.Tensor, special: torch.Tensor, policy, keys: np.ndarray, *, mask_token_id: int,
                   vocab_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's static masking for a batch at once: row k's masks depend on ``keys[k]`` (its
    example and copy) and the positions alone, never on the rest of the batch.

    The same rule as ``models.pretraining.masking.apply_masking`` (select ``rate`` of the non-special
    tokens; of those ``mask`` -> [MASK], then ``random / (random + keep)`` of the rest -> a
    uniform random id, the others kept), drawn from a counter-based hash of (key, position,
    draw) instead of one torch generator per example (<1 ms a batch of 64 here, against 30 ms).
    """
    B, T = ids.shape
    base = (np.asarray(keys, dtype=np.uint64)[:, None] * np.uint64(1_000_003)
            + np.arange(T, dtype=np.uint64)[None, :]) * np.uint64(4)
    u = [(_splitmix64(base + np.uint64(d)) >> np.uint64(11)).astype(np.float64) / float(1 << 53) for d in range(3)]
    rand_id = (_splitmix64(base + np.uint64(3)) % np.uint64(vocab_size)).astype(np.int64)
    selected = (u[0] < policy.rate) & ~special.numpy().astype(bool)
    to_mask = selected & (u[1] < policy.mask)
    rest = policy.random + policy.keep
    to_random = selected & ~to_mask & (u[2] < (policy.random / rest if rest > 0 else 0.0))
    inputs = ids.numpy().copy()
    inputs[to_mask] = mask_token_id
    inputs[to_random] = rand_id[to_random]
    labels = np.where(selected, ids.numpy(), -100)
    return torch.from_numpy(inputs), torch.from_numpy(labels)
