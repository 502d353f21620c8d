"""models/zoo/locality.py: the locality start makes heads 0 and 1 of every layer previous- and
next-token heads, read with transformers' own attention weights (output_attentions) on typed
text, for every family with a learnt absolute table; the other families are left as built."""

from __future__ import annotations

import pytest
import torch

from models.registry.zoo_entries import zoo_folder
from models.zoo import families as zm
from models.zoo import locality as loc

TEXT = "the cat sat on the mat because it was tired and the dog ran into the big garden near the old house ."
ABSOLUTE = ("mini-bert", "mini-roberta", "mini-albert", "mini-electra")


def _tokenizer(family: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(zoo_folder(family))


def _offsets(model, tok) -> list[dict]:
    """Per layer, per head: the mean attention weight from position i to i - 1, i and i + 1."""
    enc = tok(TEXT, return_tensors="pt")
    model.eval()
    model.set_attn_implementation("eager")
    with torch.no_grad():
        attentions = model(**enc, output_attentions=True).attentions
    length = enc["input_ids"].shape[1]
    i = torch.arange(length)
    rows = []
    for layer in attentions:
        a = layer[0]

        def mean_at(head: int, k: int) -> float:
            idx = i[(i + k >= 0) & (i + k < length)]
            return float(a[head, idx, idx + k].mean())

        rows.append({h: {k: mean_at(h, k) for k in (-1, 0, 1)} for h in range(a.shape[0])})
    return rows, length


@pytest.mark.parametrize("family", ABSOLUTE)
def test_heads_zero_and_one_start_looking_back_and_ahead(family):
    tok = _tokenizer(family)
    torch.manual_seed(0)
    models = zm.build_models(family, tok, zm.Shape(), dropout=0.0, position_init="local")
    for key, model in models.items():
        rows, length = _offsets(model, tok)
        uniform = 1.0 / length
        first = rows[0]
        # layer 0 reads the table directly: the offset heads are sharp there
        assert first[0][-1] > 6 * uniform and first[0][-1] > 5 * first[0][1], (key, first[0])
        assert first[1][1] > 6 * uniform and first[1][1] > 5 * first[1][-1], (key, first[1])
        for layer in rows[1:]:
            if family == "mini-albert":  # one shared layer, fitted at the first depth: still local
                assert sum(layer[0].values()) > 2 * 3 * uniform and sum(layer[1].values()) > 2 * 3 * uniform
            else:  # every layer has heads of its own, each fitted on its own input
                assert layer[0][-1] > 6 * uniform and layer[0][-1] > 5 * layer[0][1]
                assert layer[1][1] > 6 * uniform and layer[1][1] > 5 * layer[1][-1]
        for head in range(2, len(first)):  # the other heads start as transformers starts them
            assert max(first[head].values()) < 2 * uniform
        assert all(p.requires_grad for p in model.parameters())


@pytest.mark.parametrize("family", ABSOLUTE)
def test_the_random_start_has_no_offset_heads(family):
    tok = _tokenizer(family)
    torch.manual_seed(0)
    model = zm.build_models(family, tok, zm.Shape(), dropout=0.0)["model"]
    rows, length = _offsets(model, tok)
    assert max(v for layer in rows for head in layer.values() for v in head.values()) < 2.0 / length


def test_the_table_starts_as_sinusoids_at_twice_the_token_scale():
    tok = _tokenizer("mini-roberta")
    torch.manual_seed(0)
    model = zm.build_models("mini-roberta", tok, zm.Shape(), position_init="local")["model"]
    emb = model.roberta.embeddings
    table = emb.position_embeddings.weight.detach().double()
    start = emb.position_embeddings.padding_idx + 1  # RoBERTa's positions start past padding
    width = table.shape[1]
    rows = table[start:start + 20]
    # position k, pair n: (sin, cos) of k * 10000 ** (-2n / width), up to one common scale
    expected = loc.features(20, loc.frequencies(width))
    scale = float((rows * expected).sum() / (expected * expected).sum())
    assert torch.allclose(rows, scale * expected, atol=1e-6 * abs(scale) + 1e-9)
    assert float(table[start:].detach().std()) == pytest.approx(
        loc.POSITION_SCALE * float(emb.word_embeddings.weight.detach().std()), rel=1e-3)


@pytest.mark.parametrize("family", ("mini-deberta", "mini-modernbert"))
def test_families_without_a_table_are_built_as_before(family):
    tok = _tokenizer(family)
    built = []
    for init in ("random", "local"):
        torch.manual_seed(0)
        built.append(zm.build_models(family, tok, zm.Shape(), position_init=init)["model"].state_dict())
    assert built[0].keys() == built[1].keys()
    assert all(torch.equal(built[0][k], built[1][k]) for k in built[0])


def test_distilbert_from_its_teacher_keeps_the_teachers_heads():
    tok = _tokenizer("mini-distilbert")
    torch.manual_seed(0)
    teacher = zm.build_models("mini-bert", tok, zm.Shape(), position_init="local")["model"]
    student = zm.build_models("mini-distilbert", tok, zm.Shape(), teacher=teacher, position_init="local")["model"]
    assert torch.equal(student.distilbert.transformer.layer[1].attention.q_lin.weight,
                       teacher.bert.encoder.layer[2].attention.self.query.weight)


@pytest.mark.parametrize("family", ("mini-bert", "mini-electra"))
def test_the_offset_heads_survive_a_small_change_of_the_layernorm(family):
    """Training moves the embedding LayerNorm's gain and bias from the first step: a fit that
    leans on the LayerNorm's exact output (plain least squares put weights of 1e5 on the
    direction its outputs sum to zero along) would lose its heads; the ridge fit keeps them."""
    tok = _tokenizer(family)
    torch.manual_seed(0)
    model = zm.build_models(family, tok, zm.Shape(), dropout=0.0, position_init="local")["model"]
    norm = model.base_model.embeddings.LayerNorm
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        norm.weight.mul_(1 + 0.05 * torch.randn(norm.weight.shape, generator=gen))
        norm.bias.add_(0.05 * torch.randn(norm.bias.shape, generator=gen))
    rows, length = _offsets(model, tok)
    assert rows[0][0][-1] > 6 / length and rows[0][1][1] > 6 / length
    for attention in loc.attention_modules(model):
        assert float(attention.query.weight.norm(dim=1).max()) < 50.0


@pytest.mark.parametrize("family, shape", [("mini-albert", zm.Shape()),  # the zoo's 96 -> 128
                                           ("mini-electra", zm.Shape(electra_embedding=64))])
def test_the_embedding_projection_starts_norm_preserving(family, shape):
    """ALBERT's mapping (96 -> 128) and ELECTRA's projection (where its embeddings are narrower,
    64 -> 128) keep every token's embedding norm times sqrt(out / in), read on typed text with
    transformers' own output_hidden_states (the first layer's input); transformers' random start
    shrinks it."""
    tok = _tokenizer(family)
    enc = tok(TEXT, return_tensors="pt")
    ratios = {}
    for init in ("local", "random"):
        torch.manual_seed(0)
        model = zm.build_models(family, tok, shape, dropout=0.0, position_init=init)["model"].eval()
        with torch.no_grad():
            embedded = model.base_model.embeddings(input_ids=enc["input_ids"])  # after its LayerNorm
            first = model.base_model(**enc, output_hidden_states=True).hidden_states[0]
        assert embedded.shape[-1] < first.shape[-1]  # a factorised embedding, widened
        ratios[init] = first.norm(dim=-1) / embedded.norm(dim=-1)
    widening = (first.shape[-1] / embedded.shape[-1]) ** 0.5
    torch.testing.assert_close(ratios["local"], torch.full_like(ratios["local"], widening), rtol=1e-4, atol=0)
    assert float(ratios["random"].max()) < 0.5 * widening


def test_the_card_says_how_each_family_started_its_positions():
    from models.zoo.cards import TABLE_FAMILIES, position_line

    local = {"config": {"position_init": "local"}}
    for family in zm.FAMILIES:  # the card's list is the families the start changes
        torch.manual_seed(0)
        tok = _tokenizer(family)
        models = zm.build_models(family, tok, zm.Shape())
        has_table = bool(loc.position_tables(models["model"]))
        assert (family in TABLE_FAMILIES) == (has_table and family != "mini-distilbert")
        # the card names the projection's start exactly where the family's models have one
        projected = any(name.rsplit(".", 1)[-1] in loc.PROJECTIONS
                        for m in models.values() for name, _ in m.named_modules())
        line = position_line(family, local) or ""
        assert ("norm-preserving" in line) == (projected and family in TABLE_FAMILIES), family
    assert "previous- and next-token heads" in position_line("mini-albert", local)
    assert "teacher" in position_line("mini-distilbert", local)
    assert position_line("mini-deberta", local) is None
    assert position_line("mini-bert", {"config": {"position_init": "random"}}) is None
    assert position_line("mini-bert", {"config": {}}) is None  # records from before the start existed
