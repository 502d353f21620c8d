"""Named entities as BIO tags per word, entity-level F1, and the lookup baseline.

The ``entities`` task's file gives each sentence's names as character spans with a label
(PER, LOC, ELEMENT); here every word gets a tag: ``B-X`` on a name's first word, ``I-X`` on the
words after it, ``O`` elsewhere. An entity is a run of words (first, last, label), read from a
tag sequence as the CoNLL evaluation reads it: a ``B-X``, or an ``I-X`` that does not continue
an entity of label X, starts one. Precision, recall and F1 count exact entities only (same
words, same label).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ENTITY_TYPES = ("PER", "LOC", "ELEMENT")
ENTITY_LABELS = ("O",) + tuple(f"{p}-{t}" for t in ENTITY_TYPES for p in ("B", "I"))
ENTITY_WORD = re.compile(r"[^\W_]+")  # letters and digits: "Ottawa's" is "Ottawa", "s"


@dataclass(frozen=True)
class SpanScore:
    """Exact-entity precision, recall and F1 of one label (or all labels together)."""

    label: str
    precision: float
    recall: float
    f1: float
    support: int  # entities of this label in the gold tags


def entity_words(sentence: str) -> tuple[tuple[int, int], ...]:
    """Every word's character span (letters and digits; punctuation is not a word)."""
    return tuple(m.span() for m in ENTITY_WORD.finditer(sentence))


def bio_tags(sentence: str, spans: str) -> tuple[tuple[tuple[int, int], ...], tuple[int, ...]]:
    """(word spans, tag index per word) from the file's ``start:end:LABEL`` spans."""
    words = entity_words(sentence)
    tags = [0] * len(words)
    for item in spans.split():
        start, end, label = item.split(":")
        inside = [i for i, (a, b) in enumerate(words) if a >= int(start) and b <= int(end)]
        for n, i in enumerate(inside):
            tags[i] = ENTITY_LABELS.index(f"{'B' if n == 0 else 'I'}-{label}")
    return words, tuple(tags)


def entities_of(tags) -> set[tuple[int, int, str]]:
    """The (first word, last word, label) entities of one sentence's tag names."""
    found, start, current = set(), None, None
    for i, tag in enumerate(list(tags) + ["O"]):
        prefix, _, label = tag.partition("-")
        if current is not None and (prefix != "I" or label != current):
            found.add((start, i - 1, current))
            current = None
        if prefix == "B" or (prefix == "I" and current is None):
            start, current = i, label
    return found


def span_scores(gold, predicted, types=ENTITY_TYPES) -> tuple[SpanScore, ...]:
    """Per label, then all together ("all", micro-averaged): exact-entity P, R, F1.

    gold, predicted: per sentence, a sequence of tag names (``"B-LOC"``, ``"O"``, ...)."""
    pairs = [(entities_of(g), entities_of(p)) for g, p in zip(gold, predicted, strict=True)]
    out = []
    for label in (*types, "all"):
        keep = (lambda e: True) if label == "all" else (lambda e, label=label: e[2] == label)
        hits = sum(len({e for e in g if keep(e)} & {e for e in p if keep(e)}) for g, p in pairs)
        n_gold = sum(1 for g, _ in pairs for e in g if keep(e))
        n_pred = sum(1 for _, p in pairs for e in p if keep(e))
        precision = hits / n_pred if n_pred else 0.0
        recall = hits / n_gold if n_gold else 0.0
        f1 = 2 * precision * recall / (precision + recall) if hits else 0.0
        out.append(SpanScore(label, precision, recall, f1, n_gold))
    return tuple(out)


def lookup_tags(train_texts, train_tags, texts) -> list[list[str]]:
    """The baseline: tag every occurrence of a name seen in training (its words, exact case) with
    that name's label, longest name first; it knows no name it was not shown."""
    names = {}
    for text, tags in zip(train_texts, train_tags):
        words = [text[a:b] for a, b in entity_words(text)]
        for first, last, label in entities_of([ENTITY_LABELS[t] for t in tags]):
            names.setdefault(tuple(words[first:last + 1]), label)
    longest = max((len(k) for k in names), default=0)
    out = []
    for text in texts:
        words = [text[a:b] for a, b in entity_words(text)]
        tags, i = ["O"] * len(words), 0
        while i < len(words):
            n = next((n for n in range(min(longest, len(words) - i), 0, -1)
                      if tuple(words[i:i + n]) in names), 0)
            if n:
                label = names[tuple(words[i:i + n])]
                tags[i:i + n] = [f"B-{label}"] + [f"I-{label}"] * (n - 1)
            i += max(n, 1)
        out.append(tags)
    return out
