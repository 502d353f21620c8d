"""What a masked-LM knows: built-in cloze sets, each sentence's top-5 and whether it is right.

``knowledge_probe(model_key, probe_set="facts")`` runs every sentence of a probe set through
the public fill-mask path (``fill_mask``: the sentence as a user would type it, with
``[MASK]``; each model reads its own mask spelling) and checks the top guesses against the
set's accepted answers. Two sets, both written for this project:

* ``facts``: ``data/facts_cloze.json``, common facts (capitals, languages, continents,
  rivers and mountains, the calendar, the body, elements, famous works, science). Its
  phrasings are not those of the corpus's templated facts, so a hit needs the fact.
* ``everyday``: ``data/everyday_cloze.json``, everyday sentences with generous answer lists.

A guess matches when its decoded token, stripped of spaces and of the tokenizer's word
markers and lower-cased, is one of the accepted answers.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass

from ..errors import InputError
from ..registry import catalogue
from ..runtime.loading import require_head
from ..validation import check_limit
from .fill_mask import fill_mask

PROBE_SETS = {"facts": "facts_cloze.json", "everyday": "everyday_cloze.json"}
PROBE_TOP_K = 5


@dataclass(frozen=True)
class ProbeItem:
    """One cloze sentence of a probe set and the model's guesses."""

    text: str  # the sentence, with one [MASK]
    category: str  # e.g. "capitals" ("" when the set has none)
    answers: tuple[str, ...]  # accepted answers, lower case
    top: tuple[str, ...]  # the model's top-5 tokens, best first, as fill_mask decodes them
    scores: tuple[float, ...]  # their probabilities
    rank: int | None  # 1-based rank of the first accepted answer within the top 5, else None

    @property
    def top1(self) -> bool:
        return self.rank == 1

    @property
    def top5(self) -> bool:
        return self.rank is not None


@dataclass(frozen=True)
class KnowledgeProbe:
    """A model's answers on a probe set, with the summary counts."""

    model_key: str
    probe_set: str
    items: tuple[ProbeItem, ...]
    top1_hits: int
    top5_hits: int

    @property
    def n(self) -> int:
        return len(self.items)

    @property
    def top1(self) -> float:
        return self.top1_hits / max(self.n, 1)

    @property
    def top5(self) -> float:
        return self.top5_hits / max(self.n, 1)

    def by_category(self) -> dict[str, tuple[int, int, int]]:
        """category -> (sentences, top-1 hits, top-5 hits), in the set's order."""
        out: dict[str, list[int]] = {}
        for item in self.items:
            row = out.setdefault(item.category, [0, 0, 0])
            row[0] += 1
            row[1] += item.top1
            row[2] += item.top5
        return {k: tuple(v) for k, v in out.items()}


def probe_items(probe_set: str = "facts") -> tuple[dict, ...]:
    """The sentences of a built-in probe set: dicts with text, answers and category."""
    if not isinstance(probe_set, str) or probe_set not in PROBE_SETS:
        raise InputError(f"Unknown probe set {probe_set!r}; choose one of {', '.join(PROBE_SETS)}.")
    return _read_probe_set(probe_set)


@functools.lru_cache(maxsize=None)
def _read_probe_set(probe_set: str) -> tuple[dict, ...]:
    data = json.loads((catalogue.REPO_ROOT / "data" / PROBE_SETS[probe_set]).read_text(encoding="utf-8"))
    return tuple({"text": i["text"], "answers": tuple(a.lower() for a in i["answers"]),
                  "category": i.get("category", "")} for i in data["items"])


def normalise_guess(token: str) -> str:
    """A decoded token as a word to compare: no spaces, word markers ("Ġ", "▁", "##"), lower case."""
    return token.replace("\u0120", "").replace("\u2581", "").removeprefix("##").strip().lower()


def knowledge_probe(model_key: str, probe_set: str = "facts", limit: int | None = None) -> KnowledgeProbe:
    """Each sentence of ``probe_set`` ("facts" or "everyday") filled by ``model_key``: its
    top-5 and the rank of the first accepted answer; ``limit``: the first N sentences only.
    ``CapabilityError`` for a model without an MLM head; ``InputError`` for an unknown set
    or a limit out of range."""
    require_head(catalogue.get_spec(model_key), "mlm")
    sentences = probe_items(probe_set)
    sentences = sentences[:check_limit(limit, len(sentences))]
    items = []
    for item in sentences:
        preds = fill_mask(model_key, item["text"], top_k=PROBE_TOP_K).masks[0].predictions
        guesses = [normalise_guess(p.token) for p in preds]
        rank = next((i + 1 for i, g in enumerate(guesses) if g in item["answers"]), None)
        items.append(ProbeItem(item["text"], item["category"], item["answers"],
                               tuple(p.token.strip() for p in preds),
                               tuple(float(p.score) for p in preds), rank))
    return KnowledgeProbe(model_key, probe_set, tuple(items),
                          sum(i.top1 for i in items), sum(i.top5 for i in items))
