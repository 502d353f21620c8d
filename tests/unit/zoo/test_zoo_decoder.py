"""The zoo trainer's decoder twin: built in its twin's shape, trained on transformers' own
causal-LM loss (the reference: ``ModernBertDecoderForCausalLM(..., labels=...)``, which shifts
the labels itself), on the stock and the fast CPU path."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoTokenizer

from models.registry.zoo_entries import zoo_folder
from models.zoo import families as zm
from models.zoo.fast import fast_kernels


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(zoo_folder("mini-modernbert"))


def test_the_decoder_has_its_twins_shape_and_parameter_count(tokenizer):
    shape = zm.Shape(vocab=len(tokenizer))
    twin = zm.build_models("mini-modernbert", tokenizer, shape)["model"]
    decoder = zm.build_models("mini-decoder", tokenizer, shape)["model"]
    assert type(decoder).__name__ == "ModernBertDecoderForCausalLM"
    assert sum(p.numel() for p in decoder.parameters()) == sum(p.numel() for p in twin.parameters())
    for name in ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size",
                 "local_attention", "layer_types", "rope_parameters", "pad_token_id", "cls_token_id"):
        assert getattr(decoder.config, name) == getattr(twin.config, name), name


@pytest.mark.parametrize("fast", [False, True])
def test_its_objective_is_the_causal_lm_loss(tokenizer, fast):
    shape = zm.Shape(layers=2, hidden=64, heads=2, ffn=128, vocab=len(tokenizer))
    torch.manual_seed(0)
    objective = zm.Objective("mini-decoder", zm.build_models("mini-decoder", tokenizer, shape))
    ids = torch.randint(5, len(tokenizer), (3, 20))
    ids[:, 0] = tokenizer.cls_token_id
    attention = torch.ones_like(ids)
    attention[1, 14:], attention[2, 9:] = 0, 0  # padded rows
    ids = ids.masked_fill(attention == 0, tokenizer.pad_token_id)
    labels = ids.masked_fill(attention == 0, -100)
    labels[:, 0] = -100
    with fast_kernels(objective, fast):
        ours, parts = objective(ids, attention, None, ids, labels)
    theirs = objective.model(input_ids=ids, attention_mask=attention, labels=labels).loss
    assert float(ours) == pytest.approx(float(theirs), abs=1e-5)
    assert set(parts) == {"lm"}
