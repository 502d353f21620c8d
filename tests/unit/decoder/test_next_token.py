"""The zoo's decoder through the public functions, from plain text: its text path, next_token
against transformers' AutoModelForCausalLM, generation, the views that take it (Attention,
Inside one layer) and the ones that refuse it (fill-mask, the masking lab, pooling).

References: transformers' own classes on the shipped folder (loaded apart from the app), the
trainer's own example builder (``models.zoo.data.Examples``) for the ids it trained on.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from models import (
    DECODER_KEYS,
    ZOO_KEYS,
    CapabilityError,
    InputError,
    embed,
    extract_attention,
    fill_mask,
    forward_steps,
    generate_left_to_right,
    get_spec,
    next_token,
    search,
    similarity,
    simulate_masking,
    word_in_context,
)
from models.registry.zoo_entries import zoo_folder
from models.zoo.data import Examples

KEY = "mini-decoder"
PROMPT = "Once upon a time there was a"


@pytest.fixture(scope="module")
def reference():
    folder = zoo_folder(KEY)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager").eval()
    return AutoTokenizer.from_pretrained(folder), model


def test_the_decoder_stands_beside_the_zoo_not_in_it():
    spec = get_spec(KEY)
    assert KEY in DECODER_KEYS and KEY not in ZOO_KEYS
    assert spec.is_decoder and spec.can("clm") and not spec.can("mlm") and spec.can("attention")
    assert spec.twin == "mini-modernbert" and get_spec("mini-modernbert").twin == KEY


def test_it_shares_its_twins_vocabulary_exactly():
    ours = AutoTokenizer.from_pretrained(zoo_folder(KEY))
    twin = AutoTokenizer.from_pretrained(zoo_folder("mini-modernbert"))
    assert ours.get_vocab() == twin.get_vocab()
    assert ours(PROMPT)["input_ids"] == twin(PROMPT)["input_ids"]


def test_a_typed_prompt_reads_as_a_training_row_begins(reference):
    """The ids next_token reads are how the trainer's rows start: [CLS], then the pieces (no [SEP])."""
    tok, _ = reference
    result = next_token(KEY, PROMPT)
    pieces = np.asarray(tok(PROMPT, add_special_tokens=False)["input_ids"])
    row, _ = Examples(tok, [[pieces]], 128, 0).packed(0)  # [CLS] pieces [SEP], as trained
    assert result.tokens == tuple(tok.convert_ids_to_tokens(row[:-1].tolist()))


def test_next_token_is_the_softmax_of_transformers_logits(reference):
    tok, model = reference
    result = next_token(KEY, PROMPT, top_k=7)
    ids = tok(PROMPT, return_tensors="pt")["input_ids"][:, :-1]  # [CLS] + pieces, the end token left off
    with torch.no_grad():
        probs = model(input_ids=ids).logits[0, -1].softmax(-1)
    top = probs.topk(7)
    assert [p.token_id for p in result.predictions] == top.indices.tolist()
    np.testing.assert_allclose([p.score for p in result.predictions], top.values.numpy(), atol=1e-5)
    assert result.entropy == pytest.approx(float(-(probs * probs.log()).sum()), abs=1e-4)


def test_generation_with_a_decoder_reads_no_mask_and_follows_its_distribution(reference):
    tok, model = reference
    result = generate_left_to_right(KEY, PROMPT, steps=3, top_k=1)  # top_k 1: its best piece each time
    ids = tok(PROMPT, return_tensors="pt")["input_ids"][:, :-1]
    banned = set(tok.all_special_ids)
    for step in result.steps:
        assert tok.mask_token not in step.model_input and step.model_input[0] == tok.cls_token
        with torch.no_grad():
            probs = model(input_ids=ids).logits[0, -1].softmax(-1)
        probs[sorted(banned)] = 0.0
        assert step.chosen.token_id == int(probs.argmax())
        ids = torch.cat([ids, torch.tensor([[step.chosen.token_id]])], 1)


@pytest.mark.parametrize("call", [
    lambda: fill_mask(KEY, "The cat sat on the [MASK]."),
    lambda: simulate_masking(KEY, "The cat sat on the mat."),
    lambda: embed(KEY, ["The cat sat."]),
    lambda: similarity(KEY, ["The cat sat.", "A dog ran."]),
    lambda: word_in_context(KEY, ["The bank of the river.", "The bank lent money."], "bank"),
    lambda: search(KEY, "a cat"),
], ids=["fill_mask", "masking_lab", "embed", "similarity", "word_in_context", "search"])
def test_the_encoder_views_refuse_a_decoder_clearly(call):
    with pytest.raises(CapabilityError, match="a decoder does not fill blanks: see next_token"):
        call()


def test_next_token_refuses_an_encoder_and_a_mask():
    with pytest.raises(CapabilityError, match="next-token head"):
        next_token("mini-modernbert", PROMPT)
    with pytest.raises(InputError, match="does not fill blanks"):
        next_token(KEY, "The cat sat on the [MASK]")
    with pytest.raises(InputError, match="top_k"):
        next_token(KEY, PROMPT, top_k=0)


def test_its_attention_is_triangular_as_transformers_returns_it(reference):
    tok, model = reference
    result = extract_attention(KEY, "The cat sat on the mat.")
    with torch.no_grad():
        theirs = model(**tok("The cat sat on the mat.", return_tensors="pt"), output_attentions=True).attentions
    ours = result.weights  # (L, H, T, T)
    np.testing.assert_allclose(ours, torch.stack(theirs)[:, 0].numpy(), atol=1e-5)
    assert result.causal and (ours[..., np.triu(np.ones(ours.shape[-2:], bool), 1)] == 0).all()


@pytest.mark.parametrize("layer", [0, 1])
def test_inside_one_layer_reads_a_decoder_layer(reference, layer):
    steps = forward_steps(KEY, "The cat sat on the mat.", layer=layer)
    assert all(c.max_abs_error <= c.tolerance for c in steps.checks), steps.checks
    mask = steps.step("causal_mask").value
    assert (mask[np.triu_indices(mask.shape[0], 1)] == 0).all() and (np.diag(mask) == 1).all()
    assert steps.network == "the decoder"
