"""Sentence pairs for the NSP and SOP heads beyond BERT's own recipe: negatives of the same
kind of text, and pairs of single sentences as a student types them.

BERT drew an NSP negative's second segment from any document; in this corpus that is
mostly another kind of text (a novel's sentence followed by a dictionary definition), so a
head can pass by telling the sources apart. Here a negative can also come from another
chunk of the *same source* (another place in the same novel, speech or book of the Bible),
where only the story links A to B. ``NARRATIVE`` names the sources of running text, whose
consecutive sentences follow one another (dictionary entries, WordNet's examples and
fortunes are lines without an order).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .data import Examples, pad_batch, whole_sentences

NARRATIVE = ("austen", "novels", "moby-dick", "stories", "sotu", "web-bible")
NEGATIVES = ("another-source", "same-source")  # BERT's draw (any other chunk) / another chunk of the source


@dataclass(frozen=True)
class PairSplit:
    """Chunk indices by source: ``train`` and ``heldout`` (``Examples``' 2 % of chunks never
    trained on), each {source name: [chunk index, ...]} over the chunks of two sentences or more."""

    names: tuple[str, ...]
    train: dict[str, list[int]]
    heldout: dict[str, list[int]]

    def narrative(self, split: str) -> list[int]:
        by_source = self.train if split == "train" else self.heldout
        return sorted(i for s in NARRATIVE for i in by_source.get(s, ()))

    def everything(self, split: str) -> list[int]:
        by_source = self.train if split == "train" else self.heldout
        return sorted(i for ids in by_source.values() for i in ids)


def pair_split(examples: Examples, names: list[str]) -> PairSplit:
    """``names``: each chunk's source (``corpus_chunks(names=...)``)."""
    held = set(examples.eval_idx)
    train: dict[str, list[int]] = {}
    heldout: dict[str, list[int]] = {}
    for i, (chunk, name) in enumerate(zip(examples.chunks, names)):
        if len(chunk) >= 2:
            (heldout if i in held else train).setdefault(name, []).append(i)
    return PairSplit(tuple(names), train, heldout)


def _draw_other(rng: np.random.Generator, pool: list[int], i: int) -> int:
    """A chunk of ``pool`` other than ``i``."""
    if not set(pool) - {i}:
        raise ValueError(f"no chunk other than {i} to draw a negative from")
    other = pool[int(rng.integers(len(pool)))]
    if other == i:
        other = pool[(pool.index(i) + 1) % len(pool)]
    return other


def make_pair(examples: Examples, split: PairSplit, i: int, rng: np.random.Generator, kind: str, *,
              negatives: str = "same-source", single: bool = False, pool: str = "train",
              label: int | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    """[CLS] A [SEP] B [SEP] and its label from chunk ``i``: NSP (1 = B is not A's next) or SOP
    (1 = swapped). ``single``: A one sentence and B the next one (a student's pair), else
    ``Examples.pair``'s cut of the whole chunk. An NSP negative's B comes from another chunk
    of ``pool``'s split ("train" or "heldout"): of the same source (``negatives="same-source"``)
    or of any (``"another-source"``: another source's chunk, BERT's draw made plain); a single
    sentence when ``single``. ``label``: this label instead of a fair coin."""
    chunk = examples.chunks[i]
    cut = int(rng.integers(1, len(chunk)))
    a, b = (chunk[cut - 1 : cut], chunk[cut : cut + 1]) if single else (chunk[:cut], chunk[cut:])
    a, b = np.concatenate(a), b
    label = int(rng.random() < 0.5) if label is None else label
    if label and kind == "nsp":
        b = _negative(examples, split, i, rng, negatives, pool, single, b, examples.max_len - 3 - len(a))
    elif label and kind == "sop":
        a, b = np.concatenate(b), [a]
    return (*examples.join(a, np.concatenate(b)), label)


def _negative(examples, split, i, rng, negatives, pool, single, positive_b, room) -> list[np.ndarray]:
    """B of a negative pair from another chunk of ``pool``'s split: of the same source, as many
    whole sentences as the positive B (``data.whole_sentences``), so that both kinds of B end a
    sentence; of another source, BERT's draw: that chunk's opening cut to the positive B's length."""
    by_source = split.train if pool == "train" else split.heldout
    source = split.names[i]
    if negatives == "same-source":
        candidates = by_source.get(source, [])
    elif negatives == "another-source":
        candidates = [j for s, ids in by_source.items() if s != source for j in ids]
    else:
        raise ValueError(f"Unknown negatives {negatives!r}; choose one of {', '.join(NEGATIVES)}.")
    other = examples.chunks[_draw_other(rng, candidates, i)]
    if negatives == "same-source":
        return whole_sentences(other, len(positive_b), room, rng)
    if single:  # a student's pair: one whole sentence
        return [other[int(rng.integers(len(other)))]]
    return [np.concatenate(other)[: max(sum(len(x) for x in positive_b), 8)]]


@torch.no_grad()
def head_accuracy(objective, examples: Examples, split: PairSplit, *, negatives: str = "same-source",
                  single: bool = False, seed: int = 1234) -> dict:
    """The NSP or SOP head's accuracy on one pair of each held-out narrative chunk (of a source
    with another held-out chunk), built by ``make_pair`` (an NSP negative from the held-out
    chunks alone): {"accuracy", "pairs", "majority"}."""
    from .families import encode

    model, fam = objective.model, objective.family
    kind = "nsp" if fam == "mini-bert" else "sop"
    head = model.cls.seq_relationship if kind == "nsp" else model.sop_classifier
    model.eval()
    rng = np.random.default_rng(seed)
    rows = [make_pair(examples, split, i, rng, kind, negatives=negatives, single=single, pool="heldout")
            for i in split.narrative("heldout") if len(split.heldout[split.names[i]]) > 1]
    labels = np.array([r[2] for r in rows])
    right = 0
    for start in range(0, len(rows), 64):
        part = rows[start : start + 64]
        ids, tt, attention = pad_batch([r[0] for r in part], [r[1] for r in part], examples.pad)
        _, pooled = encode(fam, model, ids, attention, tt)
        right += int((head(pooled).argmax(-1).numpy() == labels[start : start + 64]).sum())
    return {"accuracy": right / max(len(rows), 1), "pairs": len(rows),
            "majority": float(max(labels.mean(), 1 - labels.mean())) if len(rows) else float("nan")}


def sentence_end_shares(examples: Examples, split: PairSplit, ends: set[int], *,
                        negatives: str = "another-source", seed: int = 1234) -> dict:
    """Of training-cut pairs of the held-out narrative chunks (as ``head_accuracy`` builds them),
    the share whose B ends on a sentence's last piece (one of ``ends``): {"positives", "negatives"}.
    BERT's negative B (``"another-source"``) is another chunk's opening cut to the positive's
    length, so it seldom does: a cue a pair head can read without reading the story."""
    rng = np.random.default_rng(seed)
    found: dict[int, list[bool]] = {0: [], 1: []}
    for i in split.narrative("heldout"):
        if len(split.heldout[split.names[i]]) > 1:
            ids, _, label = make_pair(examples, split, i, rng, "nsp", negatives=negatives, pool="heldout")
            found[label].append(int(ids[-2]) in ends)
    return {"positives": float(np.mean(found[0])), "negatives": float(np.mean(found[1]))}
