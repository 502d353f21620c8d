"""``static_vs_contextual`` against independent references: the checkpoint's hidden states and
input table read through plain transformers calls, gensim's own ``KeyedVectors`` over the shipped
word2vec file, and cosines computed pair by pair; the measured figures the lesson stands on; the
shipped vectors, their card and the built-in senses; bad input."""

from __future__ import annotations

import json
from itertools import combinations

import numpy as np
import pytest
import torch

from components.lessons import before_bert_copy
from helpers import REPO, parity_atol
from models import CapabilityError, InputError, static_vs_contextual
from models.embeddings import static_words
from models.registry import catalogue

KEY = "minilm-mlm"  # the app's default model offline, what the lesson step shows
ATOL = parity_atol()
BUILTIN = json.loads(static_words.SENSES_FILE.read_text(encoding="utf-8"))["words"]
WORDS = [entry["word"] for entry in BUILTIN]


@pytest.fixture(scope="module")
def direct():
    """The same checkpoint through plain transformers calls (no project code)."""
    from transformers import AutoModel, AutoTokenizer

    folder = catalogue.local_path(catalogue.get_spec(KEY))
    return AutoTokenizer.from_pretrained(folder), AutoModel.from_pretrained(folder).eval()


@pytest.fixture(scope="module")
def keyed_vectors():
    """The shipped word2vec rows loaded into gensim's own KeyedVectors."""
    from gensim.models import KeyedVectors

    with np.load(static_words.VECTORS_FILE) as f:
        words, vectors = f["words"].tolist(), f["vectors"].astype(np.float32)
    kv = KeyedVectors(vectors.shape[1])
    kv.add_vectors(words, vectors)
    return kv


@pytest.fixture(scope="module")
def bank():
    return static_vs_contextual("bank", model_key=KEY)


def word_states(direct, sentence: str, word: str) -> np.ndarray:
    """(L + 1, d): every layer's state at the word's first whole-word occurrence (mean of its pieces)."""
    tok, model = direct
    enc = tok(sentence, return_offsets_mapping=True, return_tensors="pt")
    start = sentence.lower().index(word)  # the built-in sentences hold the word once, whole
    picked = [t for t, (a, b) in enumerate(enc.pop("offset_mapping")[0].tolist()) if b > a and a < start + len(word) and b > start]
    with torch.no_grad():
        states = torch.stack(model(**enc, output_hidden_states=True).hidden_states)[:, 0]  # (L + 1, T, d)
    return states[:, picked].mean(dim=1).numpy()


def cosine(a, b) -> float:
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def test_contextual_figures_match_transformers_hidden_states(direct, bank):
    vectors = np.stack([word_states(direct, s, "bank") for s in bank.sentences])  # (N, L + 1, d)
    np.testing.assert_allclose(bank.last_layer, vectors[:, -1], atol=ATOL)
    for layer in bank.layers:
        same, different = [], []
        for i, j in combinations(range(len(bank.sentences)), 2):
            c = cosine(vectors[i, layer], vectors[j, layer])
            (same if bank.sense_of[i] == bank.sense_of[j] else different).append(c)
        assert bank.within[layer] == pytest.approx(np.mean(same), abs=1e-4)
        assert bank.across[layer] == pytest.approx(np.mean(different), abs=1e-4)
        hits = 0
        for i in range(len(bank.sentences)):
            others = [j for j in range(len(bank.sentences)) if j != i]
            nearest = max(others, key=lambda j: cosine(vectors[i, layer], vectors[j, layer]))
            hits += bank.sense_of[nearest] == bank.sense_of[i]
        assert bank.same_sense_nearest[layer] == pytest.approx(hits / len(bank.sentences))


def test_input_table_row_and_its_neighbours_match_the_checkpoint(direct, bank):
    tok, model = direct
    table = model.get_input_embeddings().weight.detach().numpy()
    assert bank.pieces == ("bank",)
    row = table[tok.convert_tokens_to_ids("bank")]
    words = [w for w in static_words._word2vec()[1] if w != "bank" and len(tok.tokenize(w)) == 1]
    scores = sorted(((cosine(row, table[tok.convert_tokens_to_ids(w)]), w) for w in words), reverse=True)
    expected = scores[:static_words.NEIGHBOURS]
    assert [w for w, _ in bank.table_neighbours] == [w for _, w in expected]
    np.testing.assert_allclose([c for _, c in bank.table_neighbours], [c for c, _ in expected], atol=1e-4)


@pytest.mark.parametrize("word", WORDS)
def test_word2vec_neighbours_and_cues_match_gensim(keyed_vectors, word):
    result = static_vs_contextual(word, model_key=KEY)
    theirs = keyed_vectors.most_similar(word, topn=static_words.NEIGHBOURS)
    assert [w for w, _ in result.word2vec_neighbours] == [w for w, _ in theirs]
    np.testing.assert_allclose([c for _, c in result.word2vec_neighbours], [c for _, c in theirs], atol=1e-3)
    for sense, values in zip(result.senses, result.cue_cosines):
        np.testing.assert_allclose(values, [keyed_vectors.similarity(word, cue) for cue in sense.cues], atol=1e-3)


@pytest.mark.parametrize("word", WORDS)
def test_the_senses_separate_in_context_where_the_static_vector_is_one_point(direct, word):
    """The figures the lesson shows, on the default model: one row of the input table for every
    occurrence; at layer 0 (that row plus a position, normalised) the senses are as alike as not;
    the gap between same-sense and different-sense cosines is widest at the last layer, where an
    occurrence's nearest other occurrence shares its sense more often than at layer 0."""
    result = static_vs_contextual(word, model_key=KEY)
    tok, _ = direct
    row = tok.convert_tokens_to_ids(word)
    assert all(row in tok(s)["input_ids"] for s in result.sentences)  # the same row, in every sentence
    gap = result.within - result.across
    assert abs(gap[0]) < 0.01
    assert gap[-1] == gap.max() > 0.09
    assert result.same_sense_nearest[-1] > result.same_sense_nearest[0] and result.same_sense_nearest[-1] >= 0.75


def test_your_own_senses_are_named_by_their_label_lines():
    text = ("# water\nThey drank from the spring.\nThe spring water was cold.\n\n"
            "# season\nFlowers open in spring.\nSpring came early this year.")
    result = static_vs_contextual("Spring", text, KEY)
    assert result.word == "spring" and [s.label for s in result.senses] == ["water", "season"]
    assert result.sense_of == (0, 0, 1, 1) and result.senses[0].synset is None and result.cue_cosines == ((), ())


@pytest.mark.parametrize("word, sentences, match", [
    ("river", None, "no built-in sentences for 'river'.*bank, plant, cell"),
    ("zzzqx", None, "'zzzqx' is not one of the"),
    ("  ", None, "word is empty"),
    ("spring", "The spring was cold.\nSpring came early.", r"1 sense\(s\)"),
    ("spring", "The spring was cold.\nThey drank from the spring.\n\nSpring came early.", r"sizes \[2, 1\].*each with two"),
    ("bank", "The bank shut.\nThe banker left.\n\nThe bank is steep.\nA bank of the river.", "not in sentence 2"),
])
def test_bad_input_is_an_input_error_that_says_what_to_fix(word, sentences, match):
    with pytest.raises(InputError, match=match):
        static_vs_contextual(word, sentences, KEY)


@pytest.mark.parametrize("kwargs, match", [
    ({"word": ["bank"]}, "The word must be a string, not list"),
    ({"word": 3}, "The word must be a string, not int"),
    ({"sentences": ["The bank shut.", "A bank."]}, "The sentences must be a string, not list"),
    ({"sentences": "The bank. " * 3000}, "The sentences is 30,000 characters long"),
])
def test_a_wrong_type_or_size_is_an_input_error_naming_the_argument(kwargs, match):
    with pytest.raises(InputError, match=match):
        static_vs_contextual(**{"word": "bank", "sentences": None, "model_key": KEY, **kwargs})


def test_a_decoder_is_refused():
    with pytest.raises(CapabilityError, match="decoder"):
        static_vs_contextual("bank", None, "mini-decoder")


def test_builtin_senses_are_wordnet_synsets_with_corpus_sentences():
    corpus = REPO / ".cache" / "corpus" / "train.txt"
    lines = set(corpus.read_text(encoding="utf-8").splitlines()) if corpus.is_file() else None
    for entry in BUILTIN:
        assert len(entry["senses"]) == 2
        for sense in entry["senses"]:
            assert sense["synset"].startswith(entry["word"] + ".n.") and sense["gloss"]
            assert len(sense["sentences"]) >= 3 and len(sense["cues"]) == 2
            for sentence in sense["sentences"]:
                assert sentence.lower().count(entry["word"]) == 1
                assert lines is None or sentence in lines  # a line of the training split, where it is built
    assert all(word in before_bert_copy.WORD_INFO for word in WORDS)


def test_the_shipped_vectors_are_small_and_their_record_says_how():
    record = json.loads((static_words.VECTORS_FILE.parent / "record.json").read_text(encoding="utf-8"))
    with np.load(static_words.VECTORS_FILE) as f:
        words, vectors = f["words"], f["vectors"]
    assert vectors.dtype == np.float16 and vectors.shape == (record["words"], record["settings"]["vector_size"])
    assert len(words) == len(set(words.tolist())) <= record["vocabulary_cap"]
    assert static_words.VECTORS_FILE.stat().st_size < 5 * 2**20
    assert record["corpus"]["tokens"] > 1_000_000 and record["wall_seconds"] > 0
    card = (static_words.VECTORS_FILE.parent / "MODEL_CARD.md").read_text(encoding="utf-8")
    assert f"{record['words']:,} words" in card and record["gensim"] in card
