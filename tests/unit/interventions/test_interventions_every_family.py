"""Knocking out heads, the logit lens and activation patching, for every family, against
references built here: a second copy of each model (``helpers.zoo_reference``; the
embedded ``minilm-mlm`` from its folder) run by transformers with hooks written in this
file, on module paths written in this file (not the app's lookup)."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

from helpers import parity_atol, zoo_reference
from models import (InputError, ZOO_KEYS, ablate_heads, fill_mask, get_spec, head_importance, logit_lens,
                    patch_activations)
from models.interventions.common import prepare
from models.interventions.patching import clean_states, patched_probabilities

KEYS = [*ZOO_KEYS, "minilm-mlm"]
TEXT = "The capital of France is [MASK]."
CORRUPT = "The capital of Italy is [MASK]."
ATOL = parity_atol(1e-5, 2e-2)

# Where each family keeps layer l's attention output projection W_O (its input: the heads side by side).
PROJECTION = {
    "bert": "bert.encoder.layer.{l}.attention.output.dense",
    "roberta": "roberta.encoder.layer.{l}.attention.output.dense",
    "electra": "electra.encoder.layer.{l}.attention.output.dense",
    "deberta-v2": "deberta.encoder.layer.{l}.attention.output.dense",
    "distilbert": "distilbert.transformer.layer.{l}.attention.out_lin",
    "albert": "albert.encoder.albert_layer_groups.0.albert_layers.0.attention.dense",  # one module, every layer
    "modernbert": "model.layers.{l}.attn.Wo",
}


@functools.lru_cache(maxsize=None)
def reference(key: str):
    """(tokenizer, model): transformers' Auto classes on the model's own files, float32, eager."""
    if key in ZOO_KEYS:
        return zoo_reference(key, "mlm")
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    from models.registry.catalogue import local_path

    folder = local_path(get_spec(key))
    model = AutoModelForMaskedLM.from_pretrained(folder, attn_implementation="eager", dtype=torch.float32)
    return AutoTokenizer.from_pretrained(folder), model.eval()


def family(model) -> str:
    return model.config.model_type.replace("_", "-")


def reference_probs(key: str, text: str, knock=None, mode="zero", every_call=False) -> torch.Tensor:
    """(V,) probabilities at the first mask; ``knock`` = (layer, head): that head's slice of
    W_O's input zeroed (or set to its mean over positions) by a hook of this test, in that
    layer's call only (``every_call``: in every call of the module, for ALBERT's contrast)."""
    tok, model = reference(key)
    enc = tok(text.replace("[MASK]", tok.mask_token), return_tensors="pt")
    inputs = {k: v for k, v in enc.items() if k in tok.model_input_names}
    position = enc["input_ids"][0].tolist().index(tok.mask_token_id)
    handle = None
    if knock is not None:
        layer, head = knock
        fam = family(model)
        module = model.get_submodule(PROJECTION[fam].format(l=layer))
        calls = [0]
        n_heads = model.config.num_attention_heads if fam != "distilbert" else model.config.n_heads

        def pre(_mod, args):
            call = calls[0]
            calls[0] += 1
            if fam == "albert" and call != layer and not every_call:
                return None
            z = args[0].clone()
            width = z.shape[-1] // n_heads
            cols = slice(head * width, (head + 1) * width)
            z[0, :, cols] = 0 if mode == "zero" else z[0, :, cols].mean(0, keepdim=True)
            return (z, *args[1:])

        handle = module.register_forward_pre_hook(pre)
    try:
        with torch.no_grad():
            return model(**inputs).logits[0, position].softmax(-1)
    finally:
        if handle is not None:
            handle.remove()


def _layers_heads(key):
    _, model = reference(key)
    cfg = model.config
    return (getattr(cfg, "num_hidden_layers", None) or cfg.n_layers,
            getattr(cfg, "num_attention_heads", None) or cfg.n_heads)


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("mode", ["zero", "mean"])
def test_knocked_out_head_is_the_model_with_that_slice_zeroed(key, mode):
    layers, heads = _layers_heads(key)
    knock = (layers - 1 if layers < 3 else 2, heads - 1)
    result = ablate_heads(key, TEXT, [knock], target="paris", mode=mode)
    expected = reference_probs(key, TEXT, knock, mode)
    plain = reference_probs(key, TEXT)
    after, before = result.masks[0].after, result.masks[0].before
    np.testing.assert_allclose([g.probability for g in after], expected[[g.token_id for g in after]], atol=ATOL)
    np.testing.assert_allclose([g.probability for g in before], plain[[g.token_id for g in before]], atol=ATOL)
    assert [g.token_id for g in after] == expected.topk(5).indices.tolist()
    tid = result.target.token_id
    assert result.p_target_after == pytest.approx(float(expected[tid]), abs=ATOL)
    assert result.p_target_before == pytest.approx(float(plain[tid]), abs=ATOL)
    assert (expected - plain).abs().max() > 1e-6  # the head mattered: the test can tell
    if result.target.pieces and len(result.target.pieces) > 1:
        assert "first piece" in result.target.note


def test_albert_knocks_out_one_layer_of_its_shared_module():
    """Layer 2 of ALBERT's one shared layer: not the same as knocking the head out of every call."""
    result = ablate_heads("mini-albert", TEXT, [(2, 0)])
    only = reference_probs("mini-albert", TEXT, (2, 0))
    every = reference_probs("mini-albert", TEXT, (2, 0), every_call=True)
    ids = [g.token_id for g in result.masks[0].after]
    np.testing.assert_allclose([g.probability for g in result.masks[0].after], only[ids], atol=ATOL)
    assert (only - every).abs().max() > 1e-4


@pytest.mark.parametrize("key", KEYS)
def test_no_heads_knocked_out_is_bit_identical(key):
    result = ablate_heads(key, TEXT, [])
    for mask in result.masks:
        assert mask.after == mask.before


@pytest.mark.parametrize("key", ["minilm-mlm", "mini-albert", "mini-modernbert"])
def test_head_importance_is_one_ablation_per_head(key):
    grid = head_importance(key, TEXT)
    layers, heads = _layers_heads(key)
    assert grid.delta_log_p.shape == (layers, heads)
    base = reference_probs(key, TEXT)
    assert grid.target.token_id == int(base.argmax())
    for layer, head in [(0, 0), (layers - 1, heads - 1), (layers // 2, heads // 2)]:
        p = reference_probs(key, TEXT, (layer, head))[grid.target.token_id]
        assert grid.p_without[layer, head] == pytest.approx(float(p), abs=ATOL)
        assert grid.delta_log_p[layer, head] == pytest.approx(float(p.log() - base[grid.target.token_id].log()),
                                                              abs=1e-3)


def _head(model):
    """The MLM head after the last layer, as each family's ForMaskedLM forward applies it."""
    fam = family(model)
    if fam in ("bert", "deberta-v2"):
        return model.cls
    if fam == "roberta":
        return model.lm_head
    if fam == "albert":
        return model.predictions
    if fam == "electra":
        return lambda h: model.generator_lm_head(model.generator_predictions(h))
    if fam == "distilbert":
        return lambda h: model.vocab_projector(model.vocab_layer_norm(model.activation(model.vocab_transform(h))))
    return lambda h: model.decoder(model.head(model.model.final_norm(h)))  # ModernBERT: the final norm, then the head


@pytest.mark.parametrize("key", KEYS)
def test_logit_lens_reads_hidden_states_through_the_head(key):
    lens = logit_lens(key, TEXT, top_k=5)
    tok, model = reference(key)
    enc = tok(TEXT.replace("[MASK]", tok.mask_token), return_tensors="pt")
    position = enc["input_ids"][0].tolist().index(tok.mask_token_id)
    with torch.no_grad():
        out = model(**{k: v for k, v in enc.items() if k in tok.model_input_names}, output_hidden_states=True)
        head = _head(model)
        states = list(out.hidden_states)
        if family(model) == "modernbert":  # its hidden_states[-1] is after the final norm already
            states[-1] = out.hidden_states[-1]
            probs = [head(h[:, position]).softmax(-1)[0] for h in states[:-1]]
            probs.append(out.logits[0, position].softmax(-1))
        else:
            probs = [head(h[:, position]).softmax(-1)[0] for h in states]
    assert len(lens.layers) == len(probs) == lens.num_layers + 1
    for row, expected in zip(lens.layers, probs):
        ids = [g.token_id for g in row.top]
        np.testing.assert_allclose([g.probability for g in row.top], expected[ids], atol=ATOL)
        assert row.p_target == pytest.approx(float(expected[lens.target.token_id]), abs=ATOL)
    # the last layer is fill-mask's answer
    answer = fill_mask(key, TEXT, top_k=5).masks[0].predictions
    last = lens.layers[-1].top
    assert [g.token_id for g in last] == [p.token_id for p in answer]
    np.testing.assert_allclose([g.probability for g in last], [p.score for p in answer], atol=ATOL)
    assert lens.family in lens.reading.lower() or lens.family.split("-")[0] in lens.reading.lower()


@pytest.mark.parametrize("key", KEYS)
def test_patching_every_position_of_a_layer_gives_the_clean_answer(key):
    clean, corrupt = prepare(get_spec(key), TEXT), prepare(get_spec(key), CORRUPT)
    states, _ = clean_states(clean)
    everywhere = list(range(clean.length))
    probs = patched_probabilities(corrupt, states, [(layer, everywhere) for layer in range(clean.num_layers)])
    expected = reference_probs(key, TEXT)
    for row in probs:
        np.testing.assert_allclose(row.numpy(), expected.numpy(), atol=ATOL)
    result = patch_activations(key, TEXT, CORRUPT)
    assert result.p_clean == pytest.approx(float(expected[result.target.token_id]), abs=ATOL)
    assert result.p_corrupt == pytest.approx(float(reference_probs(key, CORRUPT)[result.target.token_id]), abs=ATOL)
    assert result.p_patched.shape == (clean.num_layers, clean.length) and not result.capped


@pytest.mark.parametrize("key", KEYS)
def test_patching_the_clean_run_into_itself_changes_nothing(key):
    result = patch_activations(key, TEXT, TEXT, target="paris")
    np.testing.assert_allclose(result.p_patched, result.p_clean, atol=ATOL, rtol=0)
    assert result.p_corrupt == result.p_clean


def test_bad_inputs_name_the_argument():
    with pytest.raises(InputError, match=r"heads\[0\]: the head must be a whole number from 0 to 11"):
        ablate_heads("minilm-mlm", TEXT, [(0, 12)])
    with pytest.raises(InputError, match=r"heads\[1\]: the layer"):
        ablate_heads("minilm-mlm", TEXT, [(0, 1), (6, 0)])
    with pytest.raises(InputError, match="heads must be a list"):
        ablate_heads("minilm-mlm", TEXT, "0,1")
    with pytest.raises(InputError, match="mode must be one of zero, mean"):
        ablate_heads("minilm-mlm", TEXT, [], mode="half")
    with pytest.raises(InputError, match="no mask"):
        head_importance("minilm-mlm", "The capital of France is Paris.")
    with pytest.raises(InputError, match="no mask"):
        logit_lens("minilm-mlm", "No blank here.")
    with pytest.raises(InputError, match=r"clean_text is 9 tokens and corrupt_text is 10 tokens"):
        patch_activations("minilm-mlm", TEXT, "The capital of the Netherlands is [MASK].")
    with pytest.raises(InputError, match="top_k"):
        logit_lens("minilm-mlm", TEXT, top_k=0)


def test_patching_caps_the_positions_and_says_so():
    from models import MAX_PATCH_POSITIONS

    long = "The old mill by the river turned slowly in the evening light while " * 3 + "the capital of France is [MASK]."
    result = patch_activations("minilm-mlm", long, long.replace("France", "Italy"))
    assert result.capped and len(result.positions) == MAX_PATCH_POSITIONS
    assert result.position in result.positions
    assert result.clean_tokens.index("france") in result.positions
    assert str(MAX_PATCH_POSITIONS) in result.note


def test_the_docs_figures_are_the_codes():
    from helpers import REPO
    from models.interventions.common import MAX_BATCH_TOKENS
    from models.interventions.patching import MAX_PATCH_POSITIONS

    doc = (REPO / "docs" / "interventions.md").read_text(encoding="utf-8")
    assert f"`MAX_PATCH_POSITIONS` ({MAX_PATCH_POSITIONS})" in doc and f"at {MAX_PATCH_POSITIONS} positions" in doc
    assert f"at most {MAX_BATCH_TOKENS:,} tokens" in doc
    grid = head_importance("minilm-mlm", "The old mill by the [MASK] turned very slowly.")
    assert len(grid.tokens) == 12 and grid.delta_log_p.size + 1 == 73 and "73 batch rows" in doc
