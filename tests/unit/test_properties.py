"""Property-based tests: arbitrary unicode into every public core function.

Emoji, right-to-left scripts, zero-width and control characters, lone surrogates (which a
JSON request can carry), markup and mask spellings, and 100k-character texts. The rule:
each call returns a result or raises the project's own error (``EncoderLabError``), never
another exception, never a hang (a generous per-example deadline); and where the input is
valid by the documented rules (written out below, independently of the code), a result is
required: a function that refuses everything fails here. ``derandomize``: the examples are
the same on every run (no example database either), so a failure reproduces.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import models
from models import EncoderLabError
from models.registry.capabilities import first_capable
from models.compare.benchmark import MIN_LENGTH  # the shortest sequence length a benchmark takes

from helpers import MAX_CHARS, half_valid, masks_in, valid_text

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
LONG_VALID = "On a quiet morning the old fisherman walked down to the river bank with his [MASK]."
CHECKS = settings(
    max_examples=25,
    deadline=timedelta(seconds=30),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    database=None,
    derandomize=True,
)


def project_error_or_result(call, *args, valid: bool = False, **kwargs):
    """Run ``call``: a project error is an acceptable outcome, any other exception is not.

    ``valid``: the input is valid by the documented rules, so only a result will do.
    """
    try:
        return call(*args, **kwargs)
    except EncoderLabError as exc:
        assert str(exc).strip(), "a project error must say what is wrong"
        assert not valid, f"valid input refused: {exc}"
        return None


# --- what the README and docstrings promise to accept (not read from the code) -------------

EMBEDDED_MLM = ("minilm-mlm", "splade-tiny")  # available wherever `make setup` ran


def test_validity_rules_by_hand():
    assert valid_text("a") and valid_text(" [MASK] ") and valid_text("x" * MAX_CHARS)
    assert not valid_text("") and not valid_text(" \n\t") and not valid_text("x" * (MAX_CHARS + 1))
    assert not valid_text("a\ud800b") and not valid_text(None)
    assert masks_in("[MASK] <mask> [mask] <MASK> [MASK") == 4


@CHECKS
@given(text=texts, pair=st.one_of(st.none(), texts))
@example(text=HUGE, pair=None)
@example(text="a", pair=HUGE)
@example(text=LONG_VALID, pair="A second sentence.")  # valid: a result is required
def test_tokenize(mlm_key, text, pair):
    valid = valid_text(text) and (pair is None or valid_text(pair))
    result = project_error_or_result(models.tokenize, mlm_key, text, pair, valid=valid)
    if result is not None:
        assert len(result.tokens) == len(result.ids) == len(result.offsets)
        for (start, end), segment in zip(result.offsets, result.token_type_ids):
            assert 0 <= start <= end <= len((text, pair)[segment])


@CHECKS
@given(text=texts, top_k=st.integers(-3, 60))
@example(text=HUGE + "[MASK]", top_k=5)
@example(text="[MASK]" * 11, top_k=5)
@example(text=LONG_VALID, top_k=5)
@example(text="<mask> and [mask]", top_k=50)
def test_fill_mask(mlm_key, mlm_loaded, text, top_k):
    # short texts here (never near 512 tokens): 1-10 masks and a top_k of 1-50 are valid
    valid = valid_text(text) and len(text) <= 2000 and 1 <= masks_in(text) <= 10 and 1 <= top_k <= 50
    result = project_error_or_result(models.fill_mask, mlm_key, text, top_k, valid=valid)
    if result is not None:
        assert len(result.masks) == masks_in(text)
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
@example(text=LONG_VALID, rate=0.5, seed=1, whole_word=True, epochs=2)
def test_simulate_masking_and_loss(mlm_key, mlm_loaded, text, rate, seed, whole_word, epochs):
    valid = (valid_text(text) and len(text) <= 200 and 0 <= rate <= 1 and 0 <= seed < 2**31
             and 1 <= epochs <= 20)  # a short text: never near the lab's 256 tokens
    sim = project_error_or_result(
        models.simulate_masking, mlm_key, text, rate=rate, whole_word=whole_word, epochs=epochs, seed=seed,
        valid=valid,
    )
    if sim is not None:
        assert len(sim.epochs) == epochs
        picked = bool(sim.epochs[0].selected)  # nothing selected: the loss is undefined (an error)
        loss = project_error_or_result(models.masked_lm_loss, mlm_key, sim, 0, valid=picked)
        if loss is not None:
            assert loss.loss >= 0 and len(loss.positions) == len(sim.epochs[0].selected)


@CHECKS
@given(text=texts)
@example(text=LONG_VALID)
def test_compare_policies(mlm_key, mlm_loaded, text):
    # valid when the same draw selects something (the presets share the selection)
    sim = project_error_or_result(models.simulate_masking, mlm_key, text, 0.5, seed=0)
    valid = sim is not None and len(text) <= 200 and bool(sim.epochs[0].selected)
    result = project_error_or_result(models.compare_policies, mlm_key, text, 0.5, valid=valid)
    if result is not None:
        assert set(result) == set(models.POLICY_PRESETS)


@CHECKS
@given(sentences=st.lists(texts, max_size=5), draws=st.integers(-1, 3))
@example(sentences=[HUGE], draws=1)
@example(sentences=[LONG_VALID, "A cat."], draws=3)
def test_masking_statistics(mlm_key, sentences, draws):
    valid = 1 <= len(sentences) and all(valid_text(s) for s in sentences) and 1 <= draws <= 5000
    stats = project_error_or_result(models.masking_statistics, mlm_key, sentences, draws=draws, valid=valid)
    if stats is not None:
        assert stats.draws == draws and stats.sentences == len(sentences) and stats.special_selected == 0


@CHECKS
@given(a=texts, b=texts)
def test_pair_loss_without_a_pair_head(mlm_key, a, b):
    # The embedded models have no NSP head: a CapabilityError (or an input error) every time.
    with pytest.raises(EncoderLabError):
        models.pair_loss(mlm_key, a, b, head="nsp")


@CHECKS
@given(key=st.one_of(st.text(max_size=30),
                     st.sampled_from(["", "bert-base", "../etc", "minilm-mlm ", *EMBEDDED_MLM])),
       text=texts)
@example(key="splade-tiny", text=LONG_VALID)
def test_any_model_key(key, text):
    """Unknown keys, online-only models and odd strings: a project error, never a crash."""
    known = key in EMBEDDED_MLM
    project_error_or_result(models.fill_mask, key, text, valid=known and valid_text(text) and 1 <= masks_in(text) <= 10)
    project_error_or_result(models.tokenize, key, text, valid=known and valid_text(text))


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
@example(text=LONG_VALID, pair="The bank.")
def test_extract_attention(encoder_key, text, pair):
    valid = valid_text(text) and len(text) <= 2000 and (pair is None or valid_text(pair))
    result = project_error_or_result(models.extract_attention, encoder_key, text, pair, valid=valid)
    if result is not None:
        layers, heads, t, t2 = result.weights.shape
        assert t == t2 == len(result.tokens)
        stats = models.head_statistics(result)
        assert stats is not None


@CHECKS
@given(sentences=sentence_lists, pooling=st.sampled_from(["mean", "cls", "max", "MEAN", "", "sum"]),
       layer=st.integers(-10, 10))
@example(sentences=[LONG_VALID, "A dog."], pooling="max", layer=-7)
def test_embed_and_similarity(encoder_key, sentences, pooling, layer):
    # all-MiniLM-L6-v2: 6 layers, so 0..6 and -1..-7; short sentences (never near 512 tokens)
    ok = (not isinstance(sentences, str) and all(valid_text(s) and len(s) <= 2000 for s in sentences)
          and pooling in ("mean", "cls", "max") and -7 <= layer <= 6)
    vectors = project_error_or_result(models.embed, encoder_key, sentences, pooling, layer,
                                      valid=ok and 1 <= len(sentences) <= 50)
    if vectors is not None:
        assert vectors.shape[0] == len(sentences)
        assert not __import__("numpy").isnan(vectors).any()
    project_error_or_result(models.similarity, encoder_key, sentences, pooling, layer,
                            valid=ok and 2 <= len(sentences) <= 50)


@CHECKS
@given(sentences=sentence_lists, word=st.one_of(texts, st.just("bank")))
@example(sentences=["The river bank was flooded.", "I paid cash at the BANK today."], word="bank")
def test_word_in_context(encoder_key, sentences, word):
    # valid: 2-50 short sentences that each hold "bank" as a word
    valid = (word == "bank" and isinstance(sentences, list) and 2 <= len(sentences) <= 50
             and all(valid_text(s) and len(s) <= 2000 and re.search(r"\bbank\b", s, re.I) for s in sentences))
    project_error_or_result(models.word_in_context, encoder_key, sentences, word, valid=valid)


@CHECKS
@given(rows=st.integers(0, 5), cols=st.integers(0, 4), method=st.sampled_from(["pca", "umap", "tsne", ""]),
       fill=st.sampled_from([0.0, 1.0, float("nan"), float("inf")]))
@example(rows=3, cols=1, method="pca", fill=1.0)
def test_project_2d(rows, cols, method, fill):
    import numpy as np

    vectors = np.full((rows, cols), fill)
    if rows and cols:
        vectors[0, 0] = 2.0
    valid = method == "pca" and rows >= 2 and cols >= 1 and np.isfinite(fill)
    points = project_error_or_result(models.project_2d, vectors, method, valid=valid)
    if points is not None:
        assert points.shape == (rows, 2) and np.isfinite(points).all()


@CHECKS
@given(keys=st.lists(st.sampled_from(["minilm-mlm", "splade-tiny", "minilm-l6", "bert-base", "nope", ""]),
                     max_size=4),
       text=texts, top_k=st.integers(-1, 60))
@example(keys=["minilm-l6", "splade-tiny", "bert-base"], text=LONG_VALID, top_k=3)
def test_compare_fill_mask_and_tokens(mlm_loaded, keys, text, top_k):
    # valid: known keys, at least one embedded MLM among them (offline, Hub models are skipped)
    known = bool(keys) and not {"nope", ""} & set(keys)
    runs = known and any(k in EMBEDDED_MLM for k in keys)
    valid = runs and valid_text(text) and len(text) <= 2000 and 1 <= masks_in(text) <= 10 and 1 <= top_k <= 50
    project_error_or_result(models.compare_fill_mask, keys, text, top_k, valid=valid)
    project_error_or_result(models.compare_tokens, keys, text, valid=runs and valid_text(text))


@settings(CHECKS, max_examples=10)
@given(lengths=st.one_of(st.lists(st.integers(-5, 100_000), max_size=4), st.just("64")),
       batch=st.integers(-1, 100))
@example(lengths=[16, 8], batch=2)
def test_benchmark_forward_refuses_or_runs_bounded(lengths, batch):
    # Only requests that are refused up front, or tiny ones, run here: a big valid request
    # would be a benchmark, not a property test.
    valid = False
    if isinstance(lengths, list) and lengths and all(0 < n <= 16 for n in lengths) and 0 < batch <= 2:
        lengths = lengths[:2]
        valid = all(n >= MIN_LENGTH for n in lengths)  # tiny, and within the published limits
    elif isinstance(lengths, list) and lengths and all(0 < n <= 2048 for n in lengths) and 0 < batch <= 8:
        lengths = [-1]  # keep it an invalid request
    result = project_error_or_result(models.benchmark_forward, "splade-tiny", lengths, batch, valid=valid)
    if valid:
        assert [p.length for p in result.points] == sorted(set(lengths))  # each length once, in order


# --- issue 15: the causal mask, generation, the arithmetic, input embeddings ---------------


@CHECKS
@given(text=texts, causal=st.booleans())
@example(text=HUGE + "[MASK]", causal=True)
@example(text=LONG_VALID, causal=True)
def test_causal_fill_mask_and_attention(mlm_key, mlm_loaded, text, causal):
    short = valid_text(text) and len(text) <= 2000
    result = project_error_or_result(models.fill_mask, mlm_key, text, 3, causal,
                                     valid=short and 1 <= masks_in(text) <= 10)
    if result is not None:
        assert result.causal == causal
    attention = project_error_or_result(models.extract_attention, mlm_key, text, None, causal, valid=short)
    if attention is not None and causal:
        assert (__import__("numpy").triu(attention.weights, 1) == 0).all()


@CHECKS
@given(prompt=texts, steps=st.integers(-2, 40), seed=st.integers(-5, 2**31 + 5), top_k=st.integers(-2, 60))
@example(prompt=HUGE, steps=2, seed=0, top_k=5)
def test_generate_left_to_right(mlm_key, mlm_loaded, prompt, steps, seed, top_k):
    result = project_error_or_result(models.generate_left_to_right, mlm_key, prompt, steps, seed, top_k)
    if result is not None:
        assert len(result.steps) == steps and all(len(s.candidates) == top_k for s in result.steps)


@CHECKS
@given(logits=st.dictionaries(texts, st.one_of(st.floats(allow_nan=True), st.integers(-10**6, 10**6),
                                               st.text(max_size=3)), max_size=60),
       target=texts)
def test_explain_loss(logits, target):
    result = project_error_or_result(models.explain_loss, logits, target)
    if result is not None:
        assert 0.0 <= result.p_target <= 1.0 and result.loss >= 0.0


@CHECKS
@given(text=texts, pair=st.one_of(st.none(), texts))
@example(text=HUGE, pair=None)
@example(text=LONG_VALID, pair="The bank.")
def test_input_embeddings(encoder_key, text, pair):
    valid = valid_text(text) and len(text) <= 2000 and (pair is None or valid_text(pair))
    result = project_error_or_result(models.input_embeddings, encoder_key, text, pair, valid=valid)
    if result is not None:
        assert result.total.shape == result.token.shape and result.max_difference < 1e-4


# --- issue 15: task heads and search ------------------------------------------------------


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
        result = project_error_or_result(models.classify, head_id, text,
                                         valid=valid_text(text) and len(text) <= 200)
        if result is not None:
            assert len(result.predicted) == (1 if result.kind == "sequence" else len(result.spans))
    found = project_error_or_result(models.search, encoder_key, text, k=k, index=index,
                                    valid=valid_text(text) and len(text) <= 200 and 1 <= k <= 100
                                    and index in ("exact", "ann"))
    if found is not None:
        assert len(found.hits) == k


TASKS = ("fiction-speech", "truecase")  # the two tagger_and_probe has computed features for


@settings(CHECKS, max_examples=10)
@given(args=half_valid(
    {"task": st.sampled_from(TASKS), "pooling": st.sampled_from(["cls", "mean"]),
     "layer": st.one_of(st.none(), st.integers(-7, 6)), "epochs": st.integers(1, 3),
     "train_size": st.one_of(st.none(), st.integers(2, 12)), "seed": st.integers(0, 2**31 - 1)},
    {"task": st.sampled_from([*TASKS, "FICTION-SPEECH", "", "nope"]), "pooling": st.sampled_from(["cls", "max", ""]),
     "layer": st.one_of(st.none(), st.integers(-9, 8)), "epochs": st.integers(-1, 3),
     "train_size": st.one_of(st.none(), st.integers(-1, 12)), "seed": st.integers(-3, 2**31 + 3)}))
@example(args={"task": "fiction-speech", "pooling": "cls", "layer": 0, "epochs": 2, "train_size": 8, "seed": 1})
def test_train_classifier(encoder_key, tagger_and_probe, args):
    # valid: a listed task, cls or mean, a layer of all-MiniLM-L6-v2 (0..6, -1..-7), 1-300 probe
    # epochs, all the training sentences (None) or 2 or more of them, a seed of 0..2**31-1
    a = args
    valid = (a["task"] in TASKS and a["pooling"] in ("cls", "mean") and (a["layer"] is None or -7 <= a["layer"] <= 6)
             and 1 <= a["epochs"] <= 300 and (a["train_size"] is None or a["train_size"] >= 2)
             and 0 <= a["seed"] < 2**31)
    result = project_error_or_result(models.train_classifier, encoder_key, freeze=True, valid=valid, **args)
    if result is not None:
        assert len(result.train_accuracy) == len(result.validation_accuracy) == a["epochs"]
        assert result.head_parameters == len(result.labels) * 385  # C x 384 + C
        assert 0 <= result.final_validation_accuracy <= 1


@settings(CHECKS, max_examples=6)
@given(args=half_valid(
    {"task": st.sampled_from(TASKS), "pooling": st.sampled_from(["cls", "mean"]), "epochs": st.integers(1, 2),
     "seed": st.integers(0, 2**31 - 1)},
    {"task": st.sampled_from([*TASKS, "", "nope"]), "pooling": st.sampled_from(["cls", "mean", "sum"]),
     "epochs": st.integers(-1, 2), "seed": st.integers(-3, 2**31 + 3)}))
@example(args={"task": "fiction-speech", "pooling": "mean", "epochs": 1, "seed": 0})
def test_probe_layers(encoder_key, tagger_and_probe, args):
    a = args
    valid = a["task"] in TASKS and a["pooling"] in ("cls", "mean") and 1 <= a["epochs"] <= 300 and 0 <= a["seed"] < 2**31
    result = project_error_or_result(models.probe_layers, encoder_key, valid=valid, **args)
    if result is not None:
        assert result.layers == tuple(range(7))  # the input embeddings and six layers
        assert len(result.validation_accuracy) == 7


@settings(CHECKS, max_examples=10)
@given(args=half_valid(
    {"text": st.sampled_from([LONG_VALID, "The Congress must act.", "It was a dark night 👩‍👩‍👧."]),
     "method": st.sampled_from(models.CLASS_ATTRIBUTION_METHODS),
     "target": st.sampled_from([None, "fiction", "speech"])},
    {"text": texts, "method": st.sampled_from([*models.CLASS_ATTRIBUTION_METHODS, "attention_rollout", ""]),
     "target": st.one_of(st.none(), st.sampled_from(["fiction", "FICTION", "noun.act"]), st.text(max_size=6))}))
@example(args={"text": LONG_VALID, "method": "integrated_gradients", "target": "speech"})
def test_attribute_classification(tagger_and_probe, args):
    tagger, probe = tagger_and_probe
    # valid: a short text (never near 128 tokens), one of the head's methods, its own labels
    valid = (valid_text(args["text"]) and len(args["text"]) <= 200
             and args["method"] in models.CLASS_ATTRIBUTION_METHODS and args["target"] in (None, "fiction", "speech"))
    result = project_error_or_result(models.attribute_classification, probe, valid=valid, **args)
    if result is not None:
        assert len(result.scores) == len(result.tokens) and __import__("numpy").isfinite(result.scores).all()
    # a token task's head explains no single class: always the project's error
    with pytest.raises(EncoderLabError):
        models.attribute_classification(tagger, **args)


@settings(CHECKS, max_examples=6)
@given(args=half_valid(
    {"k": st.integers(1, 100), "pooling": st.sampled_from(["mean", "cls"]), "queries": st.integers(10, 20)},
    {"k": st.integers(-1, 120), "pooling": st.sampled_from(["mean", "MEAN", "sum"]),
     "queries": st.one_of(st.integers(-1, 20), st.just(5000))}))
@example(args={"k": 5, "pooling": "cls", "queries": 10})
def test_retrieval_report(mlm_key, args):
    # splade-tiny: the smallest embedded encoder; valid: k 1-100, cls or mean, 10-2,000 queries
    valid = 1 <= args["k"] <= 100 and args["pooling"] in ("mean", "cls") and 10 <= args["queries"] <= 2000
    report = project_error_or_result(models.retrieval_report, mlm_key, valid=valid, **args)
    if report is not None:
        assert report.queries == args["queries"] and report.k == args["k"]
        assert 0 <= report.ann_recall <= 1 and 0 <= report.dot_overlap <= 1
        assert set(report.pooling_recall) == {"cls", "mean"}


RTD, SOP = first_capable(capability="rtd"), first_capable(capability="sop")


@settings(CHECKS, max_examples=15)
@given(args=half_valid(
    {"text": st.sampled_from([LONG_VALID[:60], "The bank.", "ça 👩‍👩‍👧 [MASK]"]), "swap": st.integers(0, 10),
     "seed": st.integers(0, 2**31 - 1)},
    {"text": texts, "swap": st.integers(-1, 12), "seed": st.integers(-3, 2**64 + 3)}))
@example(args={"text": LONG_VALID, "swap": 3, "seed": 1})
@example(args={"text": HUGE, "swap": 0, "seed": 0})
@example(args={"text": "The bank.", "swap": 1, "seed": 2**64})  # past what torch's generator takes
def test_detect_replaced(args):
    # valid: a short text (the zoo reads 128 tokens), 0-10 swaps, a seed of 0..2**31-1
    text, swap, seed = args["text"], args["swap"], args["seed"]
    valid = valid_text(text) and len(text) <= 90 and 0 <= swap <= 10 and 0 <= seed < 2**31
    result = project_error_or_result(models.detect_replaced, RTD, valid=valid, **args)
    if result is not None:
        assert len(result.tokens) == len(result.p_replaced) == len(result.special)
        assert all(0 <= p <= 1 for p in result.p_replaced)
        assert len(result.swapped) == len(result.originals) <= swap


@settings(CHECKS, max_examples=15)
@given(a=st.one_of(texts, st.just(HUGE)), b=texts)
@example(a=LONG_VALID, b="A second sentence.")
def test_sentence_order(a, b):
    p = project_error_or_result(models.sentence_order, SOP, a, b, valid=valid_text(a) and valid_text(b))
    if p is not None:
        assert 0 <= p <= 1


# --- the rest of the functions that read what a user types ---------------------------------


@CHECKS
@given(text=st.one_of(texts, st.lists(st.sampled_from(["# topic", "", "A cat.", "  ", "#", "B 🙂"]), max_size=10)
                      .map("\n".join)))
def test_parse_groups(text):
    sentences, groups, topics = models.parse_groups(text)
    lines = [line.strip() for line in text.splitlines()]
    assert list(sentences) == [line for line in lines if line and not line.startswith("#")]  # by hand
    assert len(groups) == len(sentences) and list(groups) == sorted(groups) and groups[:1] in ((), (0,))
    assert topics is None or len(topics) == len(sentences)


NSP = first_capable(capability="nsp")


@CHECKS
@given(a=st.one_of(texts, st.just(HUGE)), b=texts, is_next=st.booleans())
@example(a=LONG_VALID, b="A second sentence.", is_next=False)
def test_pair_loss(a, b, is_next):
    result = project_error_or_result(models.pair_loss, NSP, a, b, is_next,
                                     valid=valid_text(a) and valid_text(b))
    if result is not None:
        assert 0 <= result.p_is_next <= 1 and result.loss >= 0


@CHECKS
@given(sentences=sentence_lists, layer=st.integers(-10, 10),
       poolings=st.lists(st.sampled_from(["cls", "mean", "max", "sum", ""]), max_size=4))
@example(sentences=[LONG_VALID, "A dog.", "A cat."], layer=-1, poolings=["cls", "mean", "max"])
def test_compare_poolings(encoder_key, sentences, layer, poolings):
    # the similarity rules: 2-50 short sentences, a layer of 0..6 or -1..-7, known poolings
    valid = (isinstance(sentences, list) and 2 <= len(sentences) <= 50
             and all(valid_text(s) and len(s) <= 2000 for s in sentences) and -7 <= layer <= 6
             and 1 <= len(poolings) and set(poolings) <= {"cls", "mean", "max"})
    results = project_error_or_result(models.compare_poolings, encoder_key, sentences, layer, poolings, valid=valid)
    if results is not None:
        assert all(r.matrix.shape == (len(sentences), len(sentences)) for r in results)


@pytest.fixture(scope="module")
def simulation(mlm_key):
    return models.simulate_masking(mlm_key, LONG_VALID, rate=0.5, epochs=2, seed=0)


@CHECKS
@given(epoch=st.integers(-1, 3), position=st.one_of(st.none(), st.integers(-2, 40)), top=st.integers(-1, 60))
@example(epoch=1, position=None, top=5)
def test_explain_masked_position(mlm_key, simulation, epoch, position, top):
    # valid: an epoch of the simulation, a position selected in it (or None: the first), top 1-50
    valid = (0 <= epoch < len(simulation.epochs) and 1 <= top <= 50
             and (position is None or position in [p.position for p in simulation.epochs[epoch].selected]))
    result = project_error_or_result(models.explain_masked_position, mlm_key, simulation, epoch, position, top,
                                     valid=valid)
    if result is not None:
        assert 0 <= result.p_target <= 1 and result.loss >= 0
