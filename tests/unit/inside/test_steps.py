"""forward_steps and mlm_gradients against transformers itself, one test per family.

The reference is a second copy of each model, loaded from the same files with transformers'
own classes and run without hooks: its ``output_attentions``, ``hidden_states`` and logits.
The mini zoo gives one model of each of the seven families; the embedded models are BERTs.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from models import (
    CapabilityError,
    InputError,
    forward_steps,
    get_device,
    get_spec,
    mlm_gradients,
)
from models.registry import catalogue

ATOL = 1e-5 if get_device().type == "cpu" else 3e-2
TEXT = "The old mill by the [MASK] turned slowly in the evening light."
ZOO = ["mini-bert", "mini-roberta", "mini-distilbert", "mini-albert", "mini-electra", "mini-deberta",
       "mini-modernbert"]
EMBEDDED = ["minilm-mlm", "splade-tiny", "minilm-l6"]


def _reference(key: str, text: str):
    """transformers' outputs for ``text``: the same files, a fresh model, no hooks."""
    from transformers import AutoModel, AutoModelForMaskedLM, AutoTokenizer

    spec = get_spec(key)
    folder = catalogue.local_path(spec)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    kwargs = {"attn_implementation": "eager", "dtype": torch.float32}
    if spec.has_mlm_head:
        if spec.mlm_subfolder:
            kwargs["subfolder"] = spec.mlm_subfolder
        model = AutoModelForMaskedLM.from_pretrained(folder, **kwargs).eval()
    else:
        model = AutoModel.from_pretrained(folder, **kwargs).eval()
    text = text.replace("[MASK]", tokenizer.mask_token)
    enc = tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        out = model(**enc, output_attentions=True, output_hidden_states=True)
    return model, tokenizer, enc, out


def _close(ours, theirs, atol=ATOL):
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs, dtype=np.float32), atol=atol, rtol=1e-4)


@pytest.mark.parametrize("key", ZOO + EMBEDDED)
def test_every_step_matches_transformers(key):
    model, tokenizer, enc, out = _reference(key, TEXT)
    layers, heads = len(out.attentions), out.attentions[0].shape[1]
    result = forward_steps(key, TEXT, layer=layers - 1, head=heads - 1)
    assert result.tokens == tuple(tokenizer.convert_ids_to_tokens(enc["input_ids"][0]))
    assert (result.num_layers, result.num_heads) == (layers, heads)
    # recomputed softmax(QKᵀ/√d_head + mask) == output_attentions
    _close(result.step("weights").value, out.attentions[-1][0, -1])
    assert np.allclose(result.step("weights").value.sum(-1), 1, atol=1e-5)
    # the layer's output == hidden_states[layer + 1] (ModernBERT: after its final norm)
    last = result.step("final_norm" if result.family == "modernbert" else "layer_output").value
    _close(last, out.hidden_states[-1][0], atol=10 * ATOL)
    # weighted values: row i of A·V, by hand, from the captured V
    a, v = result.step("weights").value, result.step("value").value
    _close(result.step("weighted_values").value, a @ v, atol=10 * ATOL)
    # the layer norms per token are the hidden states' lengths
    _close(result.layer_norms, torch.stack([h[0].norm(dim=-1) for h in out.hidden_states]), atol=1e-3)
    assert all(check.ok for check in result.checks), [c for c in result.checks if not c.ok]
    if get_spec(key).has_mlm_head:
        p = result.position
        assert tokenizer.convert_ids_to_tokens(int(enc["input_ids"][0, p])) == tokenizer.mask_token
        _close(result.step("head_logits").value, out.logits[0, p], atol=1e-4)
        probs = torch.softmax(out.logits[0, p], -1)
        best = tokenizer.convert_ids_to_tokens(int(probs.argmax()))
        assert result.predictions[0][0] == best
        assert result.predictions[0][1] == pytest.approx(float(probs.max()), abs=1e-5)
    else:
        assert result.head_steps == () and result.predictions == ()


def test_first_layer_input_is_the_embeddings():
    _, _, _, out = _reference("mini-bert", TEXT)
    result = forward_steps("mini-bert", TEXT, layer=0, head=0)
    _close(result.step("layer_input").value, out.hidden_states[0][0])
    _close(result.step("layer_output").value, out.hidden_states[1][0])


def test_deberta_three_terms_sum_to_its_scores():
    model, tokenizer, enc, out = _reference("mini-deberta", TEXT)
    result = forward_steps("mini-deberta", TEXT, layer=1, head=2)
    c2c, c2p, p2c = (result.step(f"deberta_{t}").value for t in ("c2c", "c2p", "p2c"))
    total = c2c + c2p + p2c
    _close(result.step("scaled_scores").value, total)  # no padding: nothing masked
    # their softmax is DeBERTa's own attention
    _close(torch.softmax(torch.from_numpy(total), -1), out.attentions[1][0, 2])
    # c2c by hand: Q·Kᵀ / √(3 d_head), from the captured Q and K
    q, k = result.step("query").value, result.step("key").value
    _close(c2c, q @ k.T / np.sqrt(3 * result.d_head))
    assert result.scale == pytest.approx(np.sqrt(3 * result.d_head))
    assert np.abs(c2p).max() > 0 and np.abs(p2c).max() > 0  # the position terms are not empty


def test_modernbert_rotary_query_and_local_window():
    from transformers.models.modernbert.modeling_modernbert import apply_rotary_pos_emb

    text = " ".join(["The old river ran slowly past the quiet town and its [MASK] mills."] * 3)
    model, tokenizer, enc, out = _reference("mini-modernbert", text)
    assert model.config.layer_types[1] == "sliding_attention"
    result = forward_steps("mini-modernbert", text, layer=1, head=1)
    q0, k0 = (torch.from_numpy(result.step(n).value.copy()) for n in ("query_before_rotation", "key_before_rotation"))
    t = q0.shape[0]
    cos, sin = model.model.rotary_emb(q0[None], torch.arange(t)[None], "sliding_attention")
    q, k = apply_rotary_pos_emb(q0[None, None], k0[None, None], cos, sin)
    _close(result.step("query").value, q[0, 0])
    _close(result.step("key").value, k[0, 0])
    assert not np.allclose(result.step("query").value, q0.numpy())  # the rotation did something
    # the window: ±(local_attention / 2) tokens, and the model's own weights are 0 outside it
    half = model.config.local_attention // 2
    distance = np.abs(np.subtract.outer(np.arange(t), np.arange(t)))
    np.testing.assert_array_equal(result.step("local_window").value, (distance <= half).astype(np.float32))
    assert t > half + 1 and float(out.attentions[1][0, 1][torch.from_numpy(distance > half)].abs().max()) == 0
    _close(result.step("weights").value, out.attentions[1][0, 1])
    # GeGLU: GELU(input half) ⊙ gate half
    u, g = result.step("glu_input").value, result.step("glu_gate").value
    gelu = torch.nn.functional.gelu(torch.from_numpy(u.copy())).numpy()
    _close(result.step("ffn_hidden").value, gelu * g, atol=1e-4)


def test_albert_one_shared_layer():
    model, _, _, out = _reference("mini-albert", TEXT)
    result = forward_steps("mini-albert", TEXT, layer=2, head=0)
    assert len(model.albert.encoder.albert_layer_groups) == 1  # one set of weights for 4 layers
    assert any(c.name == "albert_shared_layer" and c.ok for c in result.checks)
    assert any("same tensor object in each: True" in fact for fact in result.facts)
    e = result.step("albert_factorised_embedding").value
    assert e.shape[1] == model.config.embedding_size < model.config.hidden_size
    _close(result.step("albert_embedding_projection").value, out.hidden_states[0][0])
    _close(result.step("layer_output").value, out.hidden_states[3][0])


def test_mlm_head_steps_say_they_read_the_last_layer():
    """Layer 1 chosen: the head's dense step is the head applied to the LAST layer's output
    (transformers' hidden_states[-1]), and its text names that layer, not layer 1."""
    model, _, _, out = _reference("mini-bert", TEXT)
    result = forward_steps("mini-bert", TEXT, layer=1, head=0)
    dense = result.step("head_dense")
    with torch.no_grad():
        _close(dense.value, model.cls.predictions.transform.dense(out.hidden_states[-1][0, result.position]))
    assert "y_last" in dense.formula and "output of layer 3, the last" in dense.note
    assert "layer 1" in dense.note and "y W_h" not in dense.formula
    last = forward_steps("mini-bert", TEXT, layer=3, head=0).step("head_dense")
    assert "this layer's output, the last" in last.formula and last.note == ""


def test_modernbert_head_reads_the_final_norm_whichever_layer_is_shown():
    model, _, _, out = _reference("mini-modernbert", TEXT)
    early = forward_steps("mini-modernbert", TEXT, layer=1, head=0)
    assert "final_norm" not in [s.name for s in early.all_steps]
    assert "LayerNorm_final(y_last)" in early.step("head_dense").formula
    assert "final LayerNorm (shown as a step when layer 3 is chosen)" in early.step("head_dense").note
    late = forward_steps("mini-modernbert", TEXT, layer=3, head=0)
    names = [s.name for s in late.all_steps]
    assert names.index("final_norm") + 1 == names.index("head_dense")
    assert "the final LayerNorm's output, the step above" in late.step("head_dense").formula
    with torch.no_grad():  # hidden_states[-1] is already after the final norm
        _close(early.step("head_dense").value, model.head.dense(out.hidden_states[-1][0, early.position]))


def test_albert_head_dense_is_the_embedding_size_not_d_model():
    model, _, _, _ = _reference("mini-albert", TEXT)
    result = forward_steps("mini-albert", TEXT, layer=0, head=0)
    e, d = model.config.embedding_size, model.config.hidden_size
    for name in ("head_dense", "head_activation"):
        step = result.step(name)
        assert step.value.shape == (e,) and e != d and step.shape == "(E,)"
    assert forward_steps("mini-bert", TEXT).step("head_dense").shape == "(d_model,)"


def test_roberta_positions_start_after_the_padding_index():
    model, tokenizer, enc, _ = _reference("mini-roberta", TEXT)
    result = forward_steps("mini-roberta", TEXT)
    t = enc["input_ids"].shape[1]
    pad = model.config.pad_token_id
    np.testing.assert_array_equal(result.step("roberta_position_ids").value, np.arange(t) + pad + 1)


def test_distilbert_has_no_token_types():
    model, tokenizer, enc, out = _reference("mini-distilbert", TEXT)
    emb = model.distilbert.embeddings
    assert not hasattr(emb, "token_type_embeddings")
    result = forward_steps("mini-distilbert", TEXT)
    ids = enc["input_ids"][0]
    with torch.no_grad():
        by_hand = emb.word_embeddings(ids) + emb.position_embeddings(torch.arange(len(ids)))
    _close(result.step("distilbert_embedding_sum").value, by_hand)
    with torch.no_grad():
        normed = emb.LayerNorm(by_hand)
    _close(normed, out.hidden_states[0][0])


def test_shapes_and_formulas_are_given():
    result = forward_steps("mini-bert", TEXT, layer=1, head=3)
    t, dh = len(result.tokens), result.d_head
    assert result.step("query").value.shape == (t, dh) and result.step("query").shape == "(T, d_head)"
    assert result.step("weights").value.shape == (t, t) and result.step("weights").shape == "(T, T)"
    assert result.step("ffn_hidden").value.shape == (t, result.d_ff)
    assert all(s.formula for s in result.all_steps)
    assert result.attn_implementation == "eager"


# --- bad input ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, words", [
    ({"layer": 4}, "layer must be a whole number from 0 to 3"),
    ({"layer": -1}, "layer must be a whole number from 0 to 3"),
    ({"head": 9}, "head must be a whole number from 0 to 3"),
    ({"position": 500}, "position (token index) must be a whole number from 0 to"),
])
def test_out_of_range_names_the_range(kwargs, words):
    with pytest.raises(InputError, match=None) as info:
        forward_steps("mini-bert", TEXT, **kwargs)
    assert words in str(info.value)


def test_picking_a_smaller_model_clamps_the_layer_and_head_and_fits_the_sliders():
    """minilm-mlm's layer 5, head 11 on screen, then mini-bert (4 layers × 4 heads) picked: the
    handler wired to the Model picker shows mini-bert at its last layer and head."""
    import gradio as gr

    from components.inside.tab import build_inside_tab

    with gr.Blocks() as demo, gr.Tabs():
        model = build_inside_tab().inputs["model"]
    (picked,) = [d for d in demo.config["dependencies"] if (model._id, "input") in d["targets"]]
    status, *_, step, layer, head = demo.fns[picked["id"]].fn("mini-bert", TEXT, 5, 11, None, "query")
    assert "`mini-bert`" in status and "showing layer 3, head 3" in status
    assert (layer["value"], layer["maximum"]) == (3, 3) and (head["value"], head["maximum"]) == (3, 3)
    assert step["value"] == "query"


def test_text_over_the_limit():
    with pytest.raises(InputError, match="reads at most 128 tokens"):
        forward_steps("mini-bert", "word " * 300)


def test_no_mlm_head():
    with pytest.raises(CapabilityError, match="no trained masked-LM head"):
        forward_steps("minilm-l6", TEXT, mlm_head=True)
    with pytest.raises(CapabilityError, match="no trained masked-LM head"):
        mlm_gradients("minilm-l6", "The cat sat on the mat.")


def test_unknown_step_lists_the_steps():
    result = forward_steps("mini-bert", TEXT)
    with pytest.raises(InputError, match="its steps are: layer_input, query"):
        result.step("rotary")


# --- gradients under MLM ---------------------------------------------------------------------------


GRAD_TEXT = "The cat sat on the mat near the old house."


@pytest.mark.parametrize("key", ["mini-bert", "mini-modernbert"])
def test_mlm_gradient_reaches_unmasked_tokens_and_matches_finite_difference(key):
    result = mlm_gradients(key, GRAD_TEXT, masked=[3])
    unmasked = list(result.unmasked)
    assert result.masked == (3,) and 3 not in unmasked
    # the loss reads only the masked prediction: an unmasked position's logits get exactly 0
    assert float(np.max(result.logit_grad_norms[unmasked])) == 0.0
    assert result.logit_grad_norms[3] > 0
    # ... yet every unmasked token's input embedding gets a gradient, through attention
    assert np.all(result.embedding_grad_norms[unmasked] > 0)
    # autograd against a central difference of transformers' own MLM loss, computed here
    from models import load_model

    loaded = load_model(get_spec(key), "mlm", attn_implementation="eager")
    tok, model = loaded.tokenizer, loaded.model
    enc = tok(GRAD_TEXT, return_tensors="pt")
    ids = enc["input_ids"].clone()
    labels = torch.full_like(ids, -100)
    labels[0, 3] = ids[0, 3]
    ids[0, 3] = tok.mask_token_id
    extra = {k: v for k, v in enc.items() if k != "input_ids"}
    with torch.no_grad():
        embeds = model.get_input_embeddings()(ids)
        losses = []
        for sign in (1, -1):
            e = embeds.clone()
            e[0, result.fd_position, result.fd_dim] += sign * 1e-2
            losses.append(float(model(inputs_embeds=e, labels=labels, **extra).loss))
        assert float(model(inputs_embeds=embeds, labels=labels, **extra).loss) == pytest.approx(result.loss, rel=1e-5)
    estimate = (losses[0] - losses[1]) / 2e-2
    assert result.fd_autograd == pytest.approx(estimate, rel=5e-3)
    assert result.fd_relative_error < 5e-3


def test_mlm_gradients_of_a_float16_model_match_float32_autograd_and_finite_difference(half_precision):
    # a float16 loss keeps ~3 digits: the check's central difference was ~30 % off autograd there
    from models import load_model
    from helpers import zoo_encode, zoo_reference

    result = mlm_gradients("mini-bert", GRAD_TEXT, masked=[3])
    assert load_model(get_spec("mini-bert"), "mlm", attn_implementation="eager").dtype == torch.float16
    tok, model = zoo_reference("mini-bert", "mlm")  # float32, transformers' own model
    enc = zoo_encode("mini-bert", GRAD_TEXT)
    ids = enc.pop("input_ids").clone()
    labels = torch.full_like(ids, -100)
    labels[0, 3] = ids[0, 3]
    ids[0, 3] = tok.mask_token_id
    embeds = model.get_input_embeddings()(ids).detach().requires_grad_(True)
    loss = model(inputs_embeds=embeds, labels=labels, **enc).loss
    (grad,) = torch.autograd.grad(loss, [embeds])
    with torch.no_grad():
        losses = []
        for sign in (1, -1):
            e = embeds.detach().clone()
            e[0, result.fd_position, result.fd_dim] += sign * 1e-2
            losses.append(float(model(inputs_embeds=e, labels=labels, **enc).loss))
    estimate = (losses[0] - losses[1]) / 2e-2
    assert result.loss == pytest.approx(float(loss), rel=1e-2)  # the weights themselves are float16
    np.testing.assert_allclose(result.embedding_grad_norms, grad[0].norm(dim=-1).numpy(), rtol=2e-2)
    assert result.fd_estimate == pytest.approx(estimate, rel=2e-2)
    assert result.fd_relative_error < 5e-3


def test_mlm_gradients_bad_input():
    with pytest.raises(InputError, match="without \\[MASK\\]"):
        mlm_gradients("mini-bert", "The [MASK] sat.")
    with pytest.raises(InputError, match="must be a whole number from 0 to"):
        mlm_gradients("mini-bert", GRAD_TEXT, masked=[99])
    with pytest.raises(InputError, match="not special tokens"):
        mlm_gradients("mini-bert", GRAD_TEXT, masked=[0])


def test_albert_with_two_groups_of_shared_layers():
    """Random-init plumbing (no such checkpoint here): 4 layers in 2 groups, each group one module."""
    from transformers import AlbertConfig, AlbertForMaskedLM

    from models import load_tokenizer
    from models.inside import steps
    from models.runtime.loading import LoadedModel

    torch.manual_seed(0)
    config = AlbertConfig(vocab_size=8192, embedding_size=16, hidden_size=32, num_hidden_layers=4,
                          num_hidden_groups=2, num_attention_heads=2, intermediate_size=64,
                          max_position_embeddings=64, attn_implementation="eager")
    model = AlbertForMaskedLM(config).eval()
    loaded = LoadedModel(get_spec("mini-albert"), model, load_tokenizer(get_spec("mini-albert")), torch.device("cpu"),
                         torch.float32, 0)
    inputs, ids = steps._encode(loaded, TEXT, None)
    with torch.no_grad():
        out = model(**inputs, output_attentions=True, output_hidden_states=True)
    for layer in range(4):
        result = steps._run(loaded, inputs, ids, TEXT, None, layer, 1, 1, True, 3)
        _close(result.step("weights").value, out.attentions[layer][0, 1])
        _close(result.step("layer_output").value, out.hidden_states[layer + 1][0])
        assert all(c.ok for c in result.checks), [c for c in result.checks if not c.ok]
        group = "0–1" if layer < 2 else "2–3"
        assert any(f"layers {group} are one module" in f and "ran 2 times" in f for f in result.facts)
