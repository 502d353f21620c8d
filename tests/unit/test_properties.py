"""Property-based tests: arbitrary unicode into every public core function.

Emoji, right-to-left scripts, zero-width and control characters, lone surrogates (which a
JSON request can carry), markup and mask spellings, and 100k-character texts. The rule:
each call returns a result or raises the project's own error (``EncoderLabError``), never
another exception, never a hang (a generous per-example deadline).
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import models
from models import EncoderLabError

PIECES = [
    "[MASK]", "<mask>", "[mask]", "[CLS]", "[SEP]", "<s>", "</s>", "##ing", "Ġthe", "▁de",
    "<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "&amp;", "\"'`",
    "👩‍👩‍👧", "🇫🇷", "😀" * 5, "مرحبا بالعالم", "שלום", "\u202e\u202d", "\u200b\u200c\u200d\ufeff",
    "\x00", "\x07\x1b[31m", "\r\n\t", "e\u0301\u0301\u0301", "𝕳𝖊𝖑𝖑𝖔", "ﷺ", "\ud800", "\udfff",
    "The cat sat on the mat.", " ", "bank", "  ",
]

texts = st.one_of(
    st.text(st.characters(), max_size=80),  # any code point, surrogates included
    st.lists(st.sampled_from(PIECES), min_size=0, max_size=12).map("".join),
    st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=8)), max_size=8).map(" ".join),
)

HUGE = "a\u200b🙂 " * 25_000  # 100,000 characters
CHECKS = settings(
    max_examples=25,
    deadline=timedelta(seconds=30),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    database=None,
)


def project_error_or_result(call, *args, **kwargs):
    """Run ``call``: a project error is an acceptable outcome, any other exception is not."""
    try:
        return call(*args, **kwargs)
    except EncoderLabError as exc:
        assert str(exc).strip(), "a project error must say what is wrong"
        return None


@CHECKS
@given(text=texts, pair=st.one_of(st.none(), texts))
@example(text=HUGE, pair=None)
@example(text="a", pair=HUGE)
def test_tokenize(mlm_key, text, pair):
    result = project_error_or_result(models.tokenize, mlm_key, text, pair)
    if result is not None:
        assert len(result.tokens) == len(result.ids) == len(result.offsets)


@CHECKS
@given(text=texts, top_k=st.integers(-3, 60))
@example(text=HUGE + "[MASK]", top_k=5)
@example(text="[MASK]" * 11, top_k=5)
def test_fill_mask(mlm_key, mlm_loaded, text, top_k):
    result = project_error_or_result(models.fill_mask, mlm_key, text, top_k)
    if result is not None:
        assert 1 <= len(result.masks) <= models.MAX_MASKS
        assert all(len(m.predictions) == top_k for m in result.masks)


@CHECKS
@given(text=st.one_of(texts, st.just(HUGE)), index=st.integers(-5, 50))
def test_text_segments_and_mask_word(text, index):
    segments = models.text_segments(text)
    assert "".join(s for s, _ in segments) == text  # the segments give back the text
    masked = models.mask_word(text, index)
    assert isinstance(masked, str)


@CHECKS
@given(text=texts, rate=st.one_of(st.floats(-0.5, 1.5), st.just(float("nan"))), seed=st.integers(-1, 2**32),
       whole_word=st.booleans(), epochs=st.integers(0, 12))
@example(text=HUGE, rate=0.15, seed=0, whole_word=False, epochs=1)
def test_simulate_masking_and_loss(mlm_key, mlm_loaded, text, rate, seed, whole_word, epochs):
    sim = project_error_or_result(
        models.simulate_masking, mlm_key, text, rate=rate, whole_word=whole_word, epochs=epochs, seed=seed
    )
    if sim is not None:
        loss = project_error_or_result(models.masked_lm_loss, mlm_key, sim, 0)
        if loss is not None:
            assert loss.loss >= 0


@CHECKS
@given(text=texts)
def test_compare_policies(mlm_key, mlm_loaded, text):
    result = project_error_or_result(models.compare_policies, mlm_key, text, 0.5)
    if result is not None:
        assert set(result) == set(models.POLICY_PRESETS)


@CHECKS
@given(sentences=st.lists(texts, max_size=5), draws=st.integers(-1, 3))
@example(sentences=[HUGE], draws=1)
def test_masking_statistics(mlm_key, sentences, draws):
    project_error_or_result(models.masking_statistics, mlm_key, sentences, draws=draws)


@CHECKS
@given(a=texts, b=texts)
def test_next_sentence(mlm_key, a, b):
    # The embedded models have no NSP head: a CapabilityError (or an input error) every time.
    with pytest.raises(EncoderLabError):
        models.next_sentence(mlm_key, a, b)


@CHECKS
@given(key=st.one_of(st.text(max_size=30), st.sampled_from(["", "bert-base", "../etc", "minilm-mlm "])),
       text=texts)
def test_any_model_key(key, text):
    """Unknown keys, online-only models and odd strings: a project error, never a crash."""
    project_error_or_result(models.fill_mask, key, text)
    project_error_or_result(models.tokenize, key, text)


# --- the attention, embeddings and compare cores ------------------------------------------

sentence_lists = st.one_of(
    st.lists(texts, max_size=6),
    st.just([HUGE, "short"]),
    st.just("a single string, not a list"),
    st.lists(st.just("same"), min_size=51, max_size=51),
)


@CHECKS
@given(text=texts, pair=st.one_of(st.none(), texts))
@example(text=HUGE, pair=None)
def test_extract_attention(encoder_key, text, pair):
    result = project_error_or_result(models.extract_attention, encoder_key, text, pair)
    if result is not None:
        layers, heads, t, t2 = result.weights.shape
        assert t == t2 == len(result.tokens)
        stats = models.attention_head_stats(result)
        assert stats is not None


@CHECKS
@given(sentences=sentence_lists, pooling=st.sampled_from(["mean", "cls", "max", "MEAN", "", "sum"]),
       layer=st.integers(-10, 10))
def test_embed_and_similarity(encoder_key, sentences, pooling, layer):
    vectors = project_error_or_result(models.embed, encoder_key, sentences, pooling, layer)
    if vectors is not None:
        assert vectors.shape[0] == len(sentences)
        assert not __import__("numpy").isnan(vectors).any()
    project_error_or_result(models.similarity, encoder_key, sentences, pooling, layer)


@CHECKS
@given(sentences=sentence_lists, word=st.one_of(texts, st.just("bank")))
def test_word_in_context(encoder_key, sentences, word):
    project_error_or_result(models.word_in_context, encoder_key, sentences, word)


@CHECKS
@given(rows=st.integers(0, 5), cols=st.integers(0, 4), method=st.sampled_from(["pca", "umap", "tsne", ""]),
       fill=st.sampled_from([0.0, 1.0, float("nan"), float("inf")]))
def test_project_2d(rows, cols, method, fill):
    import numpy as np

    vectors = np.full((rows, cols), fill)
    if rows and cols:
        vectors[0, 0] = 2.0
    project_error_or_result(models.project_2d, vectors, method)


@CHECKS
@given(keys=st.lists(st.sampled_from(["minilm-mlm", "splade-tiny", "minilm-l6", "bert-base", "nope", ""]),
                     max_size=4),
       text=texts, top_k=st.integers(-1, 60))
def test_compare_fill_mask_and_tokens(mlm_loaded, keys, text, top_k):
    project_error_or_result(models.compare_fill_mask, keys, text, top_k)
    project_error_or_result(models.compare_tokens, keys, text)


@settings(CHECKS, max_examples=10)
@given(lengths=st.one_of(st.lists(st.integers(-5, 100_000), max_size=4), st.just("64")),
       batch=st.integers(-1, 100))
def test_benchmark_forward_refuses_or_runs_bounded(lengths, batch):
    # Only requests that are refused up front, or tiny ones, run here: a big valid request
    # would be a benchmark, not a property test.
    if isinstance(lengths, list) and lengths and all(0 < n <= 16 for n in lengths) and 0 < batch <= 2:
        lengths = lengths[:2]
    elif isinstance(lengths, list) and lengths and all(0 < n <= 2048 for n in lengths) and 0 < batch <= 8:
        lengths = [-1]  # keep it an invalid request
    project_error_or_result(models.benchmark_forward, "splade-tiny", lengths, batch)


@pytest.fixture(scope="module")
def tagger_and_probe(encoder_key):
    tagger = models.train_classifier(encoder_key, "truecase", epochs=1, train_size=20)
    probe = models.train_classifier(encoder_key, "fiction-speech", epochs=1, train_size=20)
    return tagger.head_id, probe.head_id


@CHECKS
@given(text=texts, k=st.integers(-2, 120), index=st.sampled_from(["exact", "ann", "", "ANN"]))
@example(text=HUGE, k=5, index="exact")
def test_classify_and_search(encoder_key, tagger_and_probe, text, k, index):
    for head_id in tagger_and_probe:
        result = project_error_or_result(models.classify, head_id, text)
        if result is not None:
            assert len(result.predicted) == (1 if result.kind == "sequence" else len(result.spans))
    found = project_error_or_result(models.search, encoder_key, text, k=k, index=index)
    if found is not None:
        assert len(found.hits) == k
