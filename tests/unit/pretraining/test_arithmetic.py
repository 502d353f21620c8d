"""The loss arithmetic (MLM softmax / −ln p, NSP / SOP binary cross-entropy) and the input embeddings.

References: torch's ``cross_entropy`` / ``binary_cross_entropy``, the model's own logits
from a plain forward pass, its weight tables read directly, and its hidden states.
"""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from models import (
    TEXTBOOK_LOGITS,
    CapabilityError,
    InputError,
    explain_loss,
    explain_masked_position,
    input_embeddings,
    load_model,
    masked_lm_loss,
    pair_loss,
    simulate_masking,
)
from models.pretraining.arithmetic import binary_cross_entropy, pair_arithmetic
from models import get_spec


def test_textbook_preset():
    r = explain_loss(TEXTBOOK_LOGITS, "cat")
    assert round(r.p_target, 2) == 0.75 and round(r.loss, 2) == 0.29  # the textbook's figures
    logits = torch.tensor([3.0, 1.5, 0.2, 0.1], dtype=torch.float64)
    assert r.loss == pytest.approx(float(F.cross_entropy(logits[None], torch.tensor([0]))), abs=1e-12)
    assert r.denominator == pytest.approx(math.exp(3) + math.exp(1.5) + math.exp(0.2) + math.exp(0.1))
    assert [row.word for row in r.rows] == ["cat", "dog", "mat", "the"]
    np.testing.assert_allclose([row.p for row in r.rows], logits.softmax(-1).numpy(), atol=1e-12)
    assert r.rest == 0.0 and r.vocabulary_size == 4


@pytest.mark.parametrize(("logits", "target", "words"), [
    ({}, "cat", "dict"),
    ({"cat": 1.0}, "dog", "not among"),
    ({"cat": float("nan")}, "cat", "finite"),
    ({"cat": "3"}, "cat", "finite"),
    ({"cat": 1000.0}, "cat", "between"),
])
def test_explain_loss_refuses_bad_input(logits, target, words):
    with pytest.raises(InputError, match=words):
        explain_loss(logits, target)


def test_a_real_position_matches_cross_entropy(mlm_key, mlm_loaded):
    sim = simulate_masking(mlm_key, "He sat on the bank of the river and watched the water.", rate=0.3, seed=2)
    epoch = sim.epochs[0]
    position = epoch.selected[-1].position
    r = explain_masked_position(mlm_key, sim, 0, position, top=5)
    with torch.no_grad():  # the model's own logits over every position, no shortcut
        logits = mlm_loaded.model(input_ids=torch.tensor([epoch.shown_ids])).logits[0, position].double()
    target = epoch.selected[-1].original_id
    assert r.loss == pytest.approx(float(F.cross_entropy(logits[None], torch.tensor([target]))), abs=1e-4)
    assert r.denominator == pytest.approx(float(logits.exp().sum()), rel=1e-5)
    top = logits.topk(5).indices.tolist()
    tokenizer = mlm_loaded.tokenizer
    assert [row.word for row in r.rows[:5]] == tokenizer.convert_ids_to_tokens(top)
    assert r.target == tokenizer.convert_ids_to_tokens(target) and r.target in [row.word for row in r.rows]
    assert sum(row.p for row in r.rows) + r.rest / r.denominator == pytest.approx(1.0, abs=1e-9)
    assert r.vocabulary_size == len(tokenizer)
    loss = masked_lm_loss(mlm_key, sim, 0)
    assert r.loss == pytest.approx(next(p.nll for p in loss.positions if p.position == position), abs=1e-4)
    assert r.position == position and r.shown == epoch.selected[-1].shown


def test_a_real_position_must_be_selected(mlm_key):
    sim = simulate_masking(mlm_key, "The cat sat on the mat.", rate=0.5, seed=0)
    chosen = {s.position for s in sim.epochs[0].selected}
    other = next(i for i in range(len(sim.tokens)) if i not in chosen)
    with pytest.raises(InputError, match="not selected"):
        explain_masked_position(mlm_key, sim, 0, other)
    assert explain_masked_position(mlm_key, sim).position == sim.epochs[0].selected[0].position


@pytest.mark.parametrize(("p", "label"), [(0.8, True), (0.8, False), (0.01, True), (0.5, False)])
def test_binary_cross_entropy_matches_torch(p, label):
    reference = F.binary_cross_entropy(torch.tensor([p], dtype=torch.float64),
                                       torch.tensor([float(label)], dtype=torch.float64))
    assert binary_cross_entropy(p, label) == pytest.approx(float(reference), rel=1e-12)


def test_nsp_score_comes_from_cls_through_the_pooler(mlm_loaded):
    """A random-init BERT with an NSP head (no trained one installs offline): plumbing only."""
    from transformers import BertConfig, BertForNextSentencePrediction

    torch.manual_seed(0)
    model = BertForNextSentencePrediction(BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                                     intermediate_size=64)).eval()
    tokenizer = mlm_loaded.tokenizer
    a, b = "The weather was cold.", "By noon it snowed."
    for is_next in (True, False):
        r = pair_arithmetic(model, tokenizer, a, b, is_next)
        with torch.no_grad():
            logits = model(**tokenizer(a, b, return_tensors="pt")).logits
        label = torch.tensor([0 if is_next else 1])  # transformers: 0 = B follows A
        assert r.loss == pytest.approx(float(F.cross_entropy(logits, label)), abs=1e-6)
        assert r.p_is_next == pytest.approx(float(logits.softmax(-1)[0, 0]), abs=1e-6)
        assert r.pooler_check < 1e-5
        assert r.loss == pytest.approx(binary_cross_entropy(r.p_is_next, is_next), abs=1e-5)


def test_nsp_loss_needs_an_nsp_head(mlm_key):
    with pytest.raises(CapabilityError, match="next-sentence"):
        pair_loss(mlm_key, "A.", "B.", True, head="nsp")


@pytest.mark.parametrize("label", [True, False])
@pytest.mark.parametrize("key", ["mini-albert", "mini-bert"])
def test_the_pair_loss_is_transformers_own_pair_head_loss(key, label):
    """``pair_loss`` from plain text on the zoo's trained pair head: mini-albert's is SOP (before:
    the Masking lab offered it for the pair loss, then refused it as having no NSP head),
    mini-bert's NSP (before, only a random-init head checked the plumbing). Reference:
    transformers' pre-training class loaded again from the zoo's folder, its total loss with its
    own pair label (0 = A, B as written / B follows A) less its MLM part, and the cross-entropy
    of its pair logits, computed here."""
    from transformers import AlbertForPreTraining, AutoTokenizer, BertForPreTraining

    from helpers import parity_atol
    from models.registry.zoo_entries import zoo_folder

    head, cls, label_arg, logits_of = {
        "mini-albert": ("sop", AlbertForPreTraining, "sentence_order_label", lambda out: out.sop_logits),
        "mini-bert": ("nsp", BertForPreTraining, "next_sentence_label", lambda out: out.seq_relationship_logits),
    }[key]
    a, b = "The weather was cold all morning.", "By noon it had started to snow."
    r = pair_loss(key, a, b, label)
    folder = zoo_folder(key)
    model = cls.from_pretrained(folder, dtype=torch.float32).eval()
    enc = AutoTokenizer.from_pretrained(folder)(a, b, return_tensors="pt", return_token_type_ids=True)
    target = torch.tensor([0 if label else 1])
    with torch.no_grad():
        out = model(**enc, labels=enc["input_ids"], **{label_arg: target})
    pair = F.cross_entropy(logits_of(out), target)
    mlm = F.cross_entropy(out.prediction_logits[0], enc["input_ids"][0])
    atol = 10 * parity_atol()
    assert r.head == head and r.is_next is label
    assert r.loss == pytest.approx(float(pair), abs=atol)
    assert r.loss == pytest.approx(float(out.loss - mlm), abs=atol)  # transformers' own total, less its MLM
    assert r.p_is_next == pytest.approx(float(logits_of(out).softmax(-1)[0, 0]), abs=atol)
    assert r.pooler_check < atol
    assert r.loss == pytest.approx(binary_cross_entropy(r.p_is_next, label), abs=1e-5)


def test_the_pair_loss_of_an_nsp_model_is_its_nsp_loss_and_a_model_without_a_pair_head_is_refused(mlm_key):
    a, b = "The weather was cold.", "By noon it snowed."
    assert pair_loss("mini-bert", a, b, False) == pair_loss("mini-bert", a, b, False, head="nsp")
    assert pair_loss("mini-bert", a, b, False).head == "nsp"
    with pytest.raises(CapabilityError, match="no sentence-pair head .* Models that have one: mini-bert, mini-albert"):
        pair_loss(mlm_key, a, b)


# --- input = token + position + segment ---------------------------------------------------


@pytest.mark.parametrize("key", ["minilm-l6", "splade-tiny"])
@pytest.mark.parametrize("pair", [None, "We sat by the river."])
def test_the_sum_is_the_models_embedding_input(key, pair):
    r = input_embeddings(key, "The bank was closed.", pair)
    loaded = load_model(get_spec(key), head="base")
    emb = loaded.model.embeddings
    enc = loaded.tokenizer("The bank was closed.", pair, return_tensors="pt")
    ids, segments = enc["input_ids"][0], enc["token_type_ids"][0]
    t = ids.shape[0]
    with torch.no_grad():  # the three tables read directly
        token = emb.word_embeddings.weight[ids]
        position = emb.position_embeddings.weight[torch.arange(t)]
        segment = emb.token_type_embeddings.weight[segments]
        layer0 = loaded.model(**enc, output_hidden_states=True).hidden_states[0][0]
    np.testing.assert_allclose(r.token, token.numpy(), atol=0)
    np.testing.assert_allclose(r.position, position.numpy(), atol=0)
    np.testing.assert_allclose(r.segment, segment.numpy(), atol=0)
    np.testing.assert_allclose(r.total, (token + position + segment).numpy(), atol=1e-6)
    np.testing.assert_allclose(r.model_input, r.total, atol=1e-5)
    assert r.max_difference < 1e-5
    np.testing.assert_allclose(r.normalized, layer0.numpy(), atol=1e-5)  # LayerNorm(sum) is layer 0
    assert r.segment_ids == tuple(segments.tolist()) and r.position_ids == tuple(range(t))
    assert r.token_ids == tuple(ids.tolist())
    assert (1 in r.segment_ids) == (pair is not None)


def test_input_embeddings_while_another_thread_runs_a_batch_through_the_same_model():
    # The app's worker threads share one model: a batch of 18 texts (an /embed request) went
    # through the same tables while this view's hooks were on, and its vectors were taken for ours.
    loaded = load_model(get_spec("minilm-l6"), head="base")
    batch = loaded.tokenizer(["a sentence of some length for the batch"] * 18, return_tensors="pt")
    alone = input_embeddings("minilm-l6", "The bank was closed.", "We sat by the river.")
    stop = threading.Event()

    def other_request():
        while not stop.is_set():
            with torch.inference_mode():
                loaded.model(**batch)

    other = threading.Thread(target=other_request)
    other.start()
    try:
        results = [input_embeddings("minilm-l6", "The bank was closed.", "We sat by the river.") for _ in range(40)]
    finally:
        stop.set()
        other.join()
    for r in results:
        assert r.tokens == alone.tokens and r.segment_ids == alone.segment_ids
        for name in ("token", "position", "segment", "model_input", "normalized"):
            np.testing.assert_array_equal(getattr(r, name), getattr(alone, name))


def test_input_embeddings_refuses_models_without_a_position_table():
    for key in ("modernbert-base", "deberta-v3-base"):
        with pytest.raises(CapabilityError, match="position"):
            input_embeddings(key, "Hello there.")


# --- max pooling: the padding lesson is real -------------------------------------------------


def test_max_pooling_without_the_mask_would_let_padding_in(encoder_key):
    from models import embed

    short, long = "A cat.", "A long sentence that makes the short one need a lot of padding here."
    loaded = load_model(get_spec(encoder_key), head="base")
    batch = loaded.tokenizer([short, long], padding=True, return_tensors="pt")
    with torch.no_grad():
        states = loaded.model(**batch).last_hidden_state[0]  # (T, d): the short row, padded
    real = int(batch["attention_mask"][0].sum())
    careless = states.max(0).values  # padding included
    careful = embed(encoder_key, [short, long], pooling="max", normalize=False)[0]
    np.testing.assert_allclose(careful, states[:real].max(0).values.numpy(), atol=1e-5)
    assert np.abs(careless.numpy() - careful).max() > 0.05
