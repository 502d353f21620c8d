"""Embeddings core on the embedded all-MiniLM-L6-v2: parity with sentence-transformers and
with direct transformers calls, batch invariance, layers, the bank demo, bad input."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from models import (
    POOLINGS,
    CapabilityError,
    InputError,
    UnknownModelError,
    compare_poolings,
    embed,
    get_device,
    project_2d,
    separation_score,
    similarity,
    word_in_context,
)
from components.embeddings.copy import SIMILARITY_DEFAULT_SET
from helpers import parity_atol, spy_onednn
from models import SeparationScore
from models.registry import catalogue as registry
from models.embeddings.pooling import MAX_SENTENCES, plan_batches
from models.embeddings.sentence_sets import bank_demo, groups_text, parse_groups, sentence_groups
from models.embeddings.separation import best_pooling, roc_auc
from models import get_spec

KEY = "minilm-l6"
ATOL = parity_atol()  # 1e-5 in float32 (CPU); wider where models run in float16 (GPU)

SHORT = "A cat."
LONG = (
    "The committee met for several hours on Tuesday to discuss the budget for the coming year, "
    "and after a long debate about schools, roads, libraries and the new hospital wing, it "
    "agreed to postpone the final vote until the next meeting in the spring."
)
MIXED = [
    SHORT,
    "Dogs bark.",
    "The quick brown fox jumps over the lazy dog.",
    LONG,
    "It rained all day, so we stayed inside and read books by the fire.",
    "Ok",
    LONG + " " + LONG,
    "Transformers read every token of the sentence at once.",
]


@pytest.fixture(scope="module")
def model_dir():
    return registry.local_path(registry.get_spec(KEY))


@pytest.fixture(scope="module")
def reference(model_dir):
    """all-MiniLM-L6-v2 through sentence-transformers itself, from the installed package."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(model_dir), device="cpu")


@pytest.fixture(scope="module")
def direct(model_dir):
    """The same checkpoint through a plain transformers call (no project code)."""
    from transformers import AutoModel, AutoTokenizer

    return AutoTokenizer.from_pretrained(model_dir), AutoModel.from_pretrained(model_dir).eval()


def hidden_states(direct, sentence: str) -> torch.Tensor:
    """(L + 1, T, d) every layer's states for one sentence, no padding."""
    tok, model = direct
    with torch.no_grad():
        out = model(**tok(sentence, return_tensors="pt"), output_hidden_states=True)
    return torch.stack(out.hidden_states)[:, 0]


# --- parity ------------------------------------------------------------------------------


def test_mean_pooling_matches_sentence_transformers(reference):
    ours = embed(KEY, MIXED, pooling="mean", normalize=True)
    theirs = reference.encode(MIXED, normalize_embeddings=True, convert_to_numpy=True)
    assert ours.dtype == np.float32 and ours.shape == (len(MIXED), 384)
    assert np.abs(ours - theirs).max() <= ATOL


def test_fused_onednn_path_on_a_padded_batch_matches_sentence_transformers(reference, monkeypatch):
    """Sentences a few tokens apart share one batch; on the CPU in float32 its blocks run
    oneDNN's fused GELU and residual adds (models/runtime/onednn.py) on the batch's real
    tokens only, packed without padding (models/runtime/packed.py), here held to
    sentence-transformers (its own model copy, padded, nn.Linear + GELU + add)."""
    from models import load_model
    from models.runtime import onednn_enabled

    calls = spy_onednn(monkeypatch)
    sentences = ["A cat.", "Dogs bark at night.", "The quick brown fox jumps over it."]
    ours = embed(KEY, sentences, pooling="mean", normalize=True)
    theirs = reference.encode(sentences, normalize_embeddings=True, convert_to_numpy=True)
    loaded = load_model(get_spec(KEY))
    real = sum(len(loaded.tokenizer(s)["input_ids"]) for s in sentences)
    assert real < len(sentences) * max(len(loaded.tokenizer(s)["input_ids"]) for s in sentences)
    if onednn_enabled() and loaded.device.type == "cpu" and loaded.dtype == torch.float32:
        for op in ("linear+gelu", "linear+add"):  # one call on the three sentences' real tokens
            assert any(name == op and shape == (real, 384) for name, _, shape in calls), op
    assert np.abs(ours - theirs).max() <= ATOL


def test_past_256_tokens_sentence_transformers_reads_only_the_first_256(direct, reference):
    """Parity holds up to sentence-transformers' max_seq_length (256 here); a longer
    sentence is read whole by ``embed`` (up to 512), so it equals sentence-transformers'
    vector only once we cut the text to its first 256 tokens ourselves."""
    tok, _ = direct
    assert reference.max_seq_length == 256
    text = " ".join([LONG] * 7)
    enc = tok(text, return_offsets_mapping=True)
    assert 256 < len(enc["input_ids"]) <= 512
    cut = text[: enc["offset_mapping"][254][1]]  # [CLS] + 254 tokens + [SEP] = 256
    assert tok(cut)["input_ids"] == enc["input_ids"][:255] + [tok.sep_token_id]
    theirs = reference.encode([text], normalize_embeddings=True, convert_to_numpy=True)[0]
    ours_cut, ours_whole = embed(KEY, [cut, text], pooling="mean", normalize=True)
    assert np.abs(ours_cut - theirs).max() <= ATOL
    assert np.abs(ours_whole - theirs).max() > 1e-3  # the whole sentence is a different vector


@pytest.mark.parametrize("layer", [-1, 6, 0, 3, -3])
def test_each_pooling_matches_a_direct_transformers_call(direct, layer):
    got = {p: embed(KEY, MIXED, pooling=p, layer=layer, normalize=False) for p in POOLINGS}
    for i, sentence in enumerate(MIXED):
        states = hidden_states(direct, sentence)[layer]  # (T, d)
        np.testing.assert_allclose(got["cls"][i], states[0].numpy(), atol=ATOL)
        np.testing.assert_allclose(got["mean"][i], states.mean(0).numpy(), atol=ATOL)
        np.testing.assert_allclose(got["max"][i], states.max(0).values.numpy(), atol=ATOL)


def test_layer_zero_is_the_embedding_output(direct):
    tok, model = direct
    enc = tok(SHORT, return_tensors="pt")
    with torch.no_grad():
        embedded = model.embeddings(input_ids=enc["input_ids"], token_type_ids=enc["token_type_ids"])
    got = embed(KEY, [SHORT, LONG], pooling="mean", layer=0, normalize=False)[0]
    np.testing.assert_allclose(got, embedded[0].mean(0).numpy(), atol=ATOL)
    assert np.abs(got - embed(KEY, [SHORT], pooling="mean", layer=-1, normalize=False)[0]).max() > 0.1


@pytest.mark.parametrize("pooling", POOLINGS)
@pytest.mark.parametrize("layer", [-1, 2])
def test_batching_never_changes_a_vector(pooling, layer):
    alone = embed(KEY, [SHORT], pooling=pooling, layer=layer, normalize=False)[0]
    batch = [LONG + " " + LONG, SHORT, LONG, "Another sentence that is a good deal longer than the first."] * 8
    together = embed(KEY, batch, pooling=pooling, layer=layer, normalize=False)
    for row in np.flatnonzero([s == SHORT for s in batch]):
        np.testing.assert_allclose(together[row], alone, atol=ATOL)
    assert np.isfinite(together).all()


def test_pooling_runs_on_the_forward_threads_and_matches_sentence_transformers(reference, monkeypatch):
    """On a CPU with two threads the batches' forwards run on the pool's threads; their pooling
    runs there too (the caller's thread would take a share of the cores of its own), and the
    vectors are still sentence-transformers'."""
    from models.embeddings import pooling as core

    if get_device().type != "cpu" or torch.get_num_threads() < 2:
        pytest.skip("two forwards at once run on a CPU with two threads or more")
    where, pool_hidden = [], core.pool_hidden

    def spy(hidden, mask, pooling):
        where.append(threading.current_thread().name)
        return pool_hidden(hidden, mask, pooling)

    monkeypatch.setattr(core, "pool_hidden", spy)
    sentences = [f"{text} ({k})" for k in range(12) for text in MIXED]  # several batches
    ours = embed(KEY, sentences, pooling="mean", normalize=True)
    theirs = reference.encode(sentences, normalize_embeddings=True, convert_to_numpy=True)
    assert np.abs(ours - theirs).max() <= ATOL
    assert len(where) >= 2 and all(name.startswith("encoder-lab-forward") for name in where), where


def test_normalize():
    raw = embed(KEY, MIXED[:3], normalize=False)
    unit = embed(KEY, MIXED[:3], normalize=True)
    assert not np.allclose(np.linalg.norm(raw, axis=1), 1.0, atol=1e-3)
    np.testing.assert_allclose(np.linalg.norm(unit, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(unit, raw / np.linalg.norm(raw, axis=1, keepdims=True), atol=1e-6)


def test_similarity_is_the_cosine_of_the_vectors():
    result = similarity(KEY, MIXED[:5], pooling="cls", layer=4)
    vectors = embed(KEY, MIXED[:5], pooling="cls", layer=4, normalize=False)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    assert result.matrix.shape == (5, 5) and result.pooling == "cls" and result.layer == 4
    np.testing.assert_allclose(result.matrix, unit @ unit.T, atol=1e-5)
    np.testing.assert_allclose(np.diag(result.matrix), 1.0, atol=1e-5)
    assert not result.matrix.flags.writeable
    both = compare_poolings(KEY, MIXED[:5], layer=-2)
    assert [r.pooling for r in both] == ["cls", "mean"] and all(r.layer == 5 for r in both)


def test_mean_similarity_matrix_is_sentence_transformers_cos_sim(reference):
    """The matrix the tab shows for mean pooling at the last layer: sentence-transformers'
    own encode (its Pooling module) and util.cos_sim."""
    from sentence_transformers import util

    result = similarity(KEY, MIXED[:6], pooling="mean")
    expected = util.cos_sim(*[reference.encode(MIXED[:6], convert_to_tensor=True)] * 2).numpy()
    np.testing.assert_allclose(result.matrix, expected, atol=ATOL)


def test_mean_pooling_beats_cls_on_the_default_set():
    """The tab's teaching claim, on the set it opens with: on all-MiniLM-L6-v2, mean pooling
    (what it was trained with) separates the paraphrase groups better than [CLS]."""
    sentences, groups, topics = parse_groups(groups_text(SIMILARITY_DEFAULT_SET))
    scores = {r.pooling: separation_score(r.matrix, groups, topics) for r in compare_poolings(KEY, sentences)}
    assert scores["mean"].auc > scores["cls"].auc
    assert best_pooling(scores) == "mean"


def test_best_pooling_breaks_an_auc_tie_by_the_gap():
    def score(auc, gap):
        return SeparationScore(within=0.5 + gap, across=0.5, gap=gap, auc=auc, same_pairs=3, different_pairs=9)

    # AUCs equal to 3 decimals: the larger gap wins, whichever order the scores come in.
    assert best_pooling({"cls": score(0.9502, 0.10), "mean": score(0.9498, 0.30)}) == "mean"
    assert best_pooling({"mean": score(0.9498, 0.10), "cls": score(0.9502, 0.30)}) == "cls"
    # A higher AUC (beyond rounding) wins over a larger gap.
    assert best_pooling({"cls": score(0.96, 0.01), "mean": score(0.95, 0.50)}) == "cls"


# --- words in context --------------------------------------------------------------------


def test_bank_demo_layers_pull_the_senses_apart():
    word, sentences = bank_demo()
    result = word_in_context(KEY, sentences, word)
    assert result.layers == tuple(range(7)) and result.vectors.shape == (4, 7, 384)
    mean = result.mean_cosine()
    assert mean[0] > mean[-1]
    # Sentences 1-2 are river banks, 3-4 money banks: at the last layer each sense stays
    # closer to itself than to the other.
    last = result.cosine[-1]
    assert min(last[0, 1], last[2, 3]) > max(last[0, 2], last[0, 3], last[1, 2], last[1, 3])


def test_word_pieces_are_averaged_and_found_by_offsets(direct):
    tok, _ = direct
    sentences = ["UNBELIEVABLY, the Kettle boiled.", "The weather was unbelievably warm today."]
    result = word_in_context(KEY, sentences, "unbelievably")
    assert result.spans == ((0, 12), (16, 28))
    pieces = tok.tokenize("unbelievably")
    assert len(pieces) > 1 and result.pieces == (tuple(pieces), tuple(pieces))
    states = hidden_states(direct, sentences[1])  # (L + 1, T, d)
    enc = tok(sentences[1], return_offsets_mapping=True)
    index = [t for t, (a, b) in enumerate(enc["offset_mapping"]) if 16 <= a and b <= 28 and b > a]
    np.testing.assert_allclose(result.vectors[1], states[:, index].mean(1).numpy(), atol=ATOL)
    v = result.vectors[:, 3]
    expected = v[0] @ v[1] / np.linalg.norm(v[0]) / np.linalg.norm(v[1])
    assert abs(result.cosine[3, 0, 1] - expected) < 1e-5


def test_word_must_be_a_whole_word_in_every_sentence():
    with pytest.raises(InputError, match=r"not in sentence 2\b.*banker"):
        word_in_context(KEY, ["The bank closed.", "The banker left.", "A bank."], "bank")
    with pytest.raises(InputError, match="word is empty"):
        word_in_context(KEY, ["The bank closed.", "A bank."], "  ")


# --- bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sentences", "words"),
    [
        (["Only one."], "give two sentences"),
        ([], "give two sentences"),
        ([f"Sentence {i}." for i in range(MAX_SENTENCES + 1)], f"limit is {MAX_SENTENCES}"),
        (["Fine.", "   "], "sentence 2 is empty"),
        ("One string, not a list.", "not a single string"),
        (["Fine.", "x" * 20_001], "sentence 2 is 20,001 characters"),
    ],
)
def test_bad_sentences_are_refused(sentences, words):
    with pytest.raises(InputError, match=words):
        similarity(KEY, sentences, "mean", -1)
    with pytest.raises(InputError, match=words):
        word_in_context(KEY, sentences, "one")


def test_bad_pooling_lists_the_valid_ones():
    with pytest.raises(InputError, match="choose one of: cls, mean, max"):
        embed(KEY, ["a", "b"], pooling="avg")


@pytest.mark.parametrize("layer", [7, -8, 1.5, "last", None, True])
def test_bad_layer_says_the_range(layer):
    with pytest.raises(InputError, match=r"from -7 to 6 for minilm-l6, which has 6 layers"):
        embed(KEY, ["a", "b"], layer=layer)


def test_too_many_tokens_and_unknown_model():
    with pytest.raises(InputError, match="Sentence 2 is .* tokens long; minilm-l6 reads at most 512"):
        embed(KEY, ["Short.", "word " * 600])
    with pytest.raises(UnknownModelError):
        embed("no-such-model", ["a", "b"])
    with pytest.raises(InputError, match="give at least 1"):
        embed(KEY, [])


# --- pure helpers ------------------------------------------------------------------------


def test_roc_auc_matches_scikit_learn_with_ties():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    pos = rng.integers(0, 5, 40) / 4
    neg = rng.integers(0, 4, 70) / 4
    expected = roc_auc_score(np.r_[np.ones(40), np.zeros(70)], np.r_[pos, neg])
    assert abs(roc_auc(pos, neg) - expected) < 1e-12


def test_separation_score_by_hand():
    m = np.array(
        [
            [1.0, 0.9, 0.5, 0.1],
            [0.9, 1.0, 0.2, 0.3],
            [0.5, 0.2, 1.0, 0.4],
            [0.1, 0.3, 0.4, 1.0],
        ]
    )
    score = separation_score(m, groups=[0, 0, 1, 1], topics=["a", "a", "a", "b"])
    # same group: (0,1)=0.9, (2,3)=0.4; different: 0.5, 0.1, 0.2, 0.3
    assert score.within == pytest.approx(0.65) and score.across == pytest.approx(0.275)
    assert score.gap == pytest.approx(0.375)
    assert score.auc == pytest.approx(7 / 8)  # 0.9 beats all 4, 0.4 beats 3 of 4
    assert score.same_topic == pytest.approx(0.35)  # (0,2)=0.5, (1,2)=0.2
    assert score.unrelated == pytest.approx(0.2)  # (0,3)=0.1, (1,3)=0.3
    assert score.auc_unrelated == pytest.approx(1.0)
    with pytest.raises(InputError, match="blank line"):
        separation_score(m, groups=[0, 1, 2, 3])


def test_pca_matches_scikit_learn_up_to_sign_and_is_deterministic():
    from sklearn.decomposition import PCA

    x = np.random.default_rng(1).normal(size=(12, 20))
    ours = project_2d(x)
    theirs = PCA(n_components=2).fit_transform(x)
    np.testing.assert_allclose(np.abs(ours), np.abs(theirs), atol=1e-5)
    np.testing.assert_array_equal(ours, project_2d(x.copy()))
    np.testing.assert_allclose(project_2d(-x), -ours, atol=1e-5)
    assert project_2d(x[:2]).shape == (2, 2)


def test_projection_errors():
    with pytest.raises(InputError, match="choose one of: pca, umap"):
        project_2d(np.zeros((3, 2)), method="tsne")
    with pytest.raises(InputError, match="N >= 2"):
        project_2d(np.zeros((1, 4)))
    import importlib.util

    if importlib.util.find_spec("umap") is None:
        with pytest.raises(CapabilityError, match="umap-learn"):
            project_2d(np.eye(4), method="umap")


def test_plan_batches_covers_each_sentence_once_sorted():
    lengths = np.random.default_rng(2).integers(3, 300, 500)
    batches = plan_batches(lengths, hidden_size=384, overhead_tokens=48, max_tokens=4096)
    flat = np.concatenate(batches)
    assert sorted(flat.tolist()) == list(range(500))
    assert all(lengths[b].max() * len(b) <= 4096 for b in batches)
    assert (np.diff(lengths[flat]) >= 0).all()
    padded = sum(lengths[b].max() * len(b) for b in batches)
    assert padded < 1.1 * lengths.sum()


def test_groups_text_round_trips_and_every_set_is_usable():
    sets = sentence_groups()
    assert len(sets) >= 3
    for name, spec in sets.items():
        sentences, groups, topics = parse_groups(groups_text(name))
        assert list(sentences) == [s for g in spec["groups"] for s in g["sentences"]]
        assert len(set(groups)) == len(spec["groups"]) and len(sentences) <= MAX_SENTENCES
    sentences, groups, topics = parse_groups("# a\nx\ny\n\nz\n# b\nw\n")
    assert sentences == ("x", "y", "z", "w") and groups == (0, 0, 1, 2)
    assert topics == ("a", "a", "a", "b")
    assert parse_groups("x\ny")[2] is None
    name = next(iter(sets))
    sets[name]["groups"].clear()  # a caller's edit does not reach the cached file
    assert sentence_groups()[name]["groups"] and groups_text(name)

