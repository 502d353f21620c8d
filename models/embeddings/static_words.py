"""Before BERT: one vector per word (static) against one vector per occurrence (contextual).

Two kinds of static vector, each the same whatever the sentence:

* the model's own **input table**: the word's row of its token-embedding table (the mean of
  its rows when the tokenizer cuts the word into pieces), read before position, segment or
  any layer;
* **word2vec**: vectors trained by this project on the corpus's training split with gensim
  (``weights/word2vec/``, ``python -m scripts.train_static_vectors``), read here with numpy.

The contextual vectors are the encoder's hidden states at the word in each sentence, every
layer (``pooling.word_occurrences``). The sentences come in senses; the figures are the mean
cosine between occurrences of the same sense and of different senses, layer by layer, and the
share of occurrences whose nearest other occurrence has the same sense.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..errors import InputError, ModelUnavailableError
from ..registry import catalogue
from ..runtime.loading import LoadedModel, load_model
from ..validation import check_text
from .pooling import word_occurrences
from .sentence_sets import parse_groups

VECTORS_FILE = catalogue.REPO_ROOT / "weights" / "word2vec" / "vectors.npz"
SENSES_FILE = catalogue.REPO_ROOT / "data" / "polysemy.json"
NEIGHBOURS = 8  # nearest words listed for each static vector


@dataclass(frozen=True)
class Sense:
    label: str
    synset: str | None  # WordNet 3.0 synset of a built-in sense; None for sentences you give
    gloss: str | None  # its WordNet gloss
    cues: tuple[str, ...]  # words of this sense whose word2vec cosine to the word is measured


@dataclass(frozen=True, eq=False)
class StaticVsContextualResult:
    """One word: its two static vectors' neighbours, and its contextual vectors by sense."""

    model_key: str
    word: str
    senses: tuple[Sense, ...]
    sentences: tuple[str, ...]
    sense_of: tuple[int, ...]  # each sentence's sense: an index of ``senses``
    pieces: tuple[str, ...]  # the word's token(s) in the model's input table
    table_neighbours: tuple[tuple[str, float], ...]  # (word, cosine): nearest rows of the input table
    word2vec_neighbours: tuple[tuple[str, float], ...]  # (word, cosine): nearest word2vec vectors
    cue_cosines: tuple[tuple[float, ...], ...]  # per sense, word2vec cosine(word, cue) for each of its cues
    static_words: int  # words of the word2vec vocabulary (the neighbours' candidates)
    layers: tuple[int, ...]  # 0 (input embeddings) .. L
    within: np.ndarray  # (L + 1,) mean cosine between occurrences of the same sense
    across: np.ndarray  # (L + 1,) mean cosine between occurrences of different senses
    same_sense_nearest: np.ndarray  # (L + 1,) share of occurrences whose nearest other one has their sense
    last_layer: np.ndarray  # (N, d) float32: the contextual vectors of the last layer


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


@lru_cache(maxsize=1)
def _word2vec() -> tuple[dict[str, int], tuple[str, ...], np.ndarray]:
    """(word -> row, words, (V, 100) float32 unit rows) of the shipped word2vec vectors."""
    if not VECTORS_FILE.is_file():
        raise ModelUnavailableError(f"The static word vectors ({VECTORS_FILE.relative_to(catalogue.REPO_ROOT)}) "
                                    "are missing: run `python -m scripts.train_static_vectors`.")
    with np.load(VECTORS_FILE) as f:
        words, vectors = f["words"].tolist(), f["vectors"].astype(np.float32)
    return {w: i for i, w in enumerate(words)}, tuple(words), _read_only(_unit(vectors))


@lru_cache(maxsize=1)
def _builtin() -> dict[str, list[dict]]:
    with open(SENSES_FILE, encoding="utf-8") as f:
        return {entry["word"]: entry["senses"] for entry in json.load(f)["words"]}


def _nearest(unit_rows: np.ndarray, words, vector: np.ndarray, word: str) -> tuple[tuple[str, float], ...]:
    """The NEIGHBOURS rows closest in cosine to ``vector`` (``word`` itself left out)."""
    cosine = unit_rows @ _unit(vector)  # (V,)
    order = np.argsort(-cosine, kind="stable")
    return tuple((words[i], round(float(cosine[i]), 4)) for i in order if words[i] != word)[:NEIGHBOURS]


_TABLE_ROWS: dict[str, tuple[tuple[str, ...], np.ndarray]] = {}  # model key -> its candidates' rows


def _table_rows(loaded: LoadedModel) -> tuple[tuple[str, ...], np.ndarray]:
    """The word2vec words that are one piece for this tokenizer, and their unit rows of its input
    table: the candidates for the table's neighbours (word2vec's own, where they are one piece).
    Kept per model key (a few MB each; a race computes the same rows twice)."""
    key = loaded.spec.key
    if key not in _TABLE_ROWS:
        words = _word2vec()[1]
        ids = loaded.tokenizer([" " + w for w in words], add_special_tokens=False)["input_ids"]
        single = [(w, i[0]) for w, i in zip(words, ids) if len(i) == 1]
        table = loaded.model.get_input_embeddings().weight.detach()
        rows = table[[i for _, i in single]].float().cpu().numpy()  # (V', d)
        if len(_TABLE_ROWS) >= 4:
            _TABLE_ROWS.clear()
        _TABLE_ROWS[key] = tuple(w for w, _ in single), _read_only(_unit(rows))
    return _TABLE_ROWS[key]


def _senses(word: str, text) -> tuple[tuple[Sense, ...], tuple[str, ...], tuple[int, ...]]:
    """(senses, sentences, sense of each): the built-in ones for ``word`` when ``text`` is empty."""
    if text is None or (isinstance(text, str) and not text.strip()):
        entry = _builtin().get(word)
        if entry is None:
            raise InputError(f"There are no built-in sentences for {word!r} (there are for: {', '.join(_builtin())}): "
                             "give sentences, one per line, a blank line between two senses.")
        senses = tuple(Sense(s["label"], s["synset"], s["gloss"], tuple(s["cues"])) for s in entry)
        return senses, tuple(x for s in entry for x in s["sentences"]), tuple(
            k for k, s in enumerate(entry) for _ in s["sentences"])
    sentences, groups, topics = parse_groups(check_text(text, what="sentences"))
    counts = np.bincount(groups) if groups else np.zeros(0, dtype=int)
    if len(counts) < 2 or counts.min() < 2:
        raise InputError(f"The sentences make {len(counts)} sense(s) of sizes {counts.tolist()}: give two senses "
                         "or more, each with two sentences or more, a blank line between two senses.")
    labels = [(topics[groups.index(g)] if topics else "") or f"sense {g + 1}" for g in range(len(counts))]
    return tuple(Sense(label, None, None, ()) for label in labels), sentences, groups


def _by_sense(cosine: np.ndarray, sense_of: tuple[int, ...]):
    """(within, across, same-sense nearest), each (L + 1,), from the (L + 1, N, N) cosines."""
    senses = np.asarray(sense_of)
    same = senses[:, None] == senses[None, :]  # (N, N)
    other = ~np.eye(len(senses), dtype=bool)
    within = cosine[:, same & other].mean(axis=-1)
    across = cosine[:, ~same].mean(axis=-1)
    nearest = np.where(other, cosine, -np.inf).argmax(axis=-1)  # (L + 1, N)
    return within, across, (senses[nearest] == senses).mean(axis=-1)


def static_vs_contextual(word: str, sentences: str | None = None, model_key: str | None = None
                         ) -> StaticVsContextualResult:
    """``word``'s static vectors (the model's input-table row, word2vec trained on the corpus) and
    its contextual vectors in sentences of two senses or more, every layer of the encoder.

    sentences: one per line, a blank line between two senses ('# label' lines name them); None or
    empty: the built-in senses of bank, plant or cell (WordNet synsets, corpus sentences).
    model_key: an encoder (None: the app's default model).
    """
    spec = catalogue.get_spec(model_key if model_key is not None else catalogue.default_model_key())
    word = check_text(word, what="word", empty=f"type a word, e.g. one of: {', '.join(_builtin())}").strip().lower()
    index, words, unit = _word2vec()
    if word not in index:
        raise InputError(f"{word!r} is not one of the {len(index):,} words of the static vectors (word2vec trained "
                         "on the corpus, lower case, the most frequent words): choose a word the corpus uses often.")
    senses, texts, sense_of = _senses(word, sentences)
    occurrences = word_occurrences(spec, texts, word)  # checks the sentences and that each holds the word
    loaded = load_model(spec, head="base")
    ids = loaded.tokenizer(" " + word, add_special_tokens=False)["input_ids"]
    table = loaded.model.get_input_embeddings().weight.detach()
    row = table[ids].float().mean(dim=0).cpu().numpy()  # (d,)
    table_words, table_unit = _table_rows(loaded)
    static = unit[index[word]]
    within, across, nearest = _by_sense(occurrences.cosine, sense_of)
    return StaticVsContextualResult(
        model_key=spec.key, word=word, senses=senses, sentences=texts, sense_of=tuple(sense_of),
        pieces=tuple(loaded.tokenizer.convert_ids_to_tokens(ids)),
        table_neighbours=_nearest(table_unit, table_words, row, word),
        word2vec_neighbours=_nearest(unit, words, static, word),
        cue_cosines=tuple(tuple(round(float(unit[index[c]] @ static), 4) if c in index else float("nan")
                                for c in s.cues) for s in senses),
        static_words=len(index), layers=occurrences.layers,
        within=_read_only(within.astype(np.float32)), across=_read_only(across.astype(np.float32)),
        same_sense_nearest=_read_only(nearest.astype(np.float32)),
        last_layer=_read_only(np.ascontiguousarray(occurrences.vectors[:, -1])),
    )
