"""Fill-mask, its causal toggle and generation, and the Compare tab's side-by-side views, for
every family of the mini zoo: from text typed as a student types it ("[MASK]", whatever the
family's own mask token), through the tabs' own handlers.

References, each a second copy of the model loaded by transformers' Auto classes from the
family's folder (``helpers.zoo_reference``): ``pipeline("fill-mask")`` on the text with the
family's own mask token; the same model under a causal mask built here; greedy generation
written here from the tokenizer's own ids; the tokenizer's own tokens.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from components.compare import tab as compare_tab
from components.fill_mask import tab as fill_mask_tab
from components.lessons import views as lesson_views
from components.shell.common import show_token
from helpers import zoo_reference
from models import MASK_PATTERN, ZOO_KEYS, fill_mask, get_device, get_spec

TYPED = "The capital of France is [MASK]."
TOL = 1e-5 if get_device().type == "cpu" else 2e-3


def _pipeline_top(key: str, typed: str, top_k: int) -> list[list[dict]]:
    """transformers' fill-mask pipeline on the text with the family's own mask token."""
    from transformers import pipeline

    tok, model = zoo_reference(key, "mlm")
    pipe = pipeline("fill-mask", model=copy.deepcopy(model), tokenizer=tok, device="cpu")
    out = pipe(typed.replace("[MASK]", tok.mask_token), top_k=top_k)
    return [out] if isinstance(out[0], dict) else out


def _rows(table) -> list[tuple[int, int, str, float]]:
    return [tuple(row) for row in table["data"]]


@pytest.mark.parametrize("key", ZOO_KEYS)
def test_typed_mask_predictions_are_the_pipelines(key):
    """What the live event shows for "[MASK]" typed: the pipeline's top 5 with the own mask token."""
    words, table, _, filled, status, _ = fill_mask_tab.predict_live(TYPED, key, 5, True)
    (expected,) = _pipeline_top(key, TYPED, 5)
    got = _rows(table)
    assert [(m, r, t) for m, r, t, _ in got] == [(1, r, show_token(e["token_str"])) for r, e in enumerate(expected, 1)]
    np.testing.assert_allclose([p for *_, p in got], [e["score"] for e in expected], atol=TOL + 1e-6)
    best = expected[0]["token_str"].strip()
    assert filled == TYPED.replace(" [MASK]", best.removeprefix("##")) if expected[0]["token_str"].startswith("##") \
        else filled == TYPED.replace("[MASK]", best)
    assert "1 mask(s)" in status and [w for w in words if w[1]] == [("[MASK]", "mask")]


@pytest.mark.parametrize("key", ZOO_KEYS)
def test_causal_toggle_is_the_model_under_a_causal_mask(key):
    """The causal checkbox: each position sees only itself and its left. Reference: the same
    weights with a causal mask made here (-inf above the diagonal), passed as transformers'
    4-D additive mask; DeBERTa cannot take one, and the status line says so."""
    text = "The old man sat by the [MASK] and slept."
    if not get_spec(key).can("causal"):
        out = fill_mask_tab.predict_live(text, key, 5, True, True)
        assert "cannot take a causal mask" in out[4]
        return
    _, table, _, _, status, _ = fill_mask_tab.predict_live(text, key, 5, True, True)
    tok, model = zoo_reference(key, "mlm")
    enc = tok(text.replace("[MASK]", tok.mask_token), return_tensors="pt")
    inputs = {k: v for k, v in enc.items() if k in tok.model_input_names}
    t = enc["input_ids"].shape[1]
    blocked = torch.ones(t, t, dtype=torch.bool).triu(1)
    inputs["attention_mask"] = torch.zeros(1, 1, t, t).masked_fill(blocked, torch.finfo(torch.float32).min)
    position = enc["input_ids"][0].tolist().index(tok.mask_token_id)
    with torch.no_grad():
        probs = model(**inputs).logits[0, position].softmax(-1)
        both = model(**{**inputs, "attention_mask": torch.ones(1, t, dtype=torch.long)}).logits[0, position].softmax(-1)
    scores, ids = probs.topk(5)
    got = _rows(table)
    assert [tok_ for _, _, tok_, _ in got] == [show_token(tok.decode([i])) for i in ids.tolist()]
    np.testing.assert_allclose([p for *_, p in got], scores.numpy(), atol=TOL + 1e-6)
    assert "causal mask" in status
    assert (probs - both).abs().max() > 1e-4  # the right side mattered before the mask


@pytest.mark.parametrize("key", ZOO_KEYS)
def test_generation_is_greedy_fill_of_an_appended_mask(key):
    """Generate with top_k=1: each step appends the mask token before the closing special
    token, takes the most probable ordinary token there, and appends it (written here from
    the tokenizer's own ids)."""
    prompt, steps = "The old man sat by the", 4
    text, frame = fill_mask_tab.generate(prompt, key, steps, 0, 1)
    tok, model = zoo_reference(key, "mlm")
    enc = tok(prompt, return_special_tokens_mask=True)
    special = enc["special_tokens_mask"]
    first, last = special.index(0), len(special) - special[::-1].index(0)
    lead, ids, trail = enc["input_ids"][:first], enc["input_ids"][first:last], enc["input_ids"][last:]
    banned = set(tok.all_special_ids)
    read = []
    for _ in range(steps):
        model_ids = lead + ids + [tok.mask_token_id] + trail
        read.append(" ".join(tok.convert_ids_to_tokens(model_ids)))
        with torch.no_grad():
            probs = model(input_ids=torch.tensor([model_ids])).logits[0, len(lead) + len(ids)].softmax(-1)
        probs[sorted(i for i in banned if i < probs.shape[0])] = 0.0
        ids = ids + [int(probs.argmax())]
    assert text == tok.decode(ids)
    assert frame["the model read"].tolist() == read
    assert frame["text after the step"].iloc[-1] == text


@pytest.fixture(scope="module")
def side_by_side():
    text = "She opened the [MASK] and walked into the garden."
    return text, compare_tab.run_compare_fill_mask(list(ZOO_KEYS), text, 3)


@pytest.mark.parametrize("key", ZOO_KEYS)
def test_compare_tab_column_is_each_familys_pipeline(side_by_side, key):
    text, (frame, agreement, skipped) = side_by_side
    (expected,) = _pipeline_top(key, text, 3)
    assert list(frame["rank"]) == [1, 2, 3] and skipped == ""  # every family took part
    assert list(frame[key]) == [f"{show_token(e['token_str'])} ({e['score']:.1%})" for e in expected]


def test_lessons_variants_step_shows_the_same_top_3_for_every_miniature(side_by_side):
    """The Lessons' "every miniature" step: its table is the Compare tab's, family by family."""
    text, (frame, _, _) = side_by_side
    *_, table, _ = lesson_views.variants(text)
    assert set(ZOO_KEYS) <= set(table.columns)
    for key in ZOO_KEYS:
        assert list(table[key]) == list(frame[key]), key


def test_compare_tokens_read_either_mask_spelling_as_each_models_own_mask():
    """The tab's default text writes [MASK] once and <mask> once: every model's pieces hold its
    own mask token twice, as its predictions read the text, and no mask spelling's letters."""
    text = "The capital of France is [MASK]. Paris is a <mask> city."
    _, frame, _ = compare_tab.run_compare_tokens(list(ZOO_KEYS), text)
    for key, row in zip(ZOO_KEYS, frame.to_dict("records")):
        tok = zoo_reference(key)[0]
        read = text.replace("[MASK]", tok.mask_token).replace("<mask>", tok.mask_token)
        enc = tok(read, return_special_tokens_mask=True)
        pieces = [t for t, s in zip(tok.convert_ids_to_tokens(enc["input_ids"]), enc["special_tokens_mask"]) if not s]
        assert row["pieces (space separated)"] == " ".join(pieces), key
        assert pieces.count(tok.mask_token) == 2 and row["pieces"] == len(pieces), key
        assert row["continue a word"] == 0, key  # whole words only: no mask letters continuing a word


def test_compare_tokens_are_each_tokenizers_own():
    text = "Tokenizers split unbelievably long words differently."
    _, frame, _ = compare_tab.run_compare_tokens(list(ZOO_KEYS), text)
    assert list(frame["model"]) == list(ZOO_KEYS)
    for key, row in zip(ZOO_KEYS, frame.to_dict("records")):
        tok = zoo_reference(key)[0]
        enc = tok(text, return_special_tokens_mask=True)
        tokens = tok.convert_ids_to_tokens(enc["input_ids"])
        pieces = [t for t, s in zip(tokens, enc["special_tokens_mask"]) if not s]
        assert row["pieces (space separated)"] == " ".join(pieces), key
        assert (row["pieces"], row["with special tokens"]) == (len(pieces), len(tokens)), key
        if "WordPiece" in row["tokenizer"]:
            assert row["continue a word"] == sum(p.startswith("##") for p in pieces), key


# Several masks, both spellings, any case, one at the very start, one against punctuation.
MANY = "[MASK] said the <mask> was near the [mask], by the <MASK>."


@pytest.mark.parametrize("key", ZOO_KEYS)
def test_several_masks_in_either_spelling_are_the_pipelines(key):
    """models.fill_mask as a notebook calls it: every mask of the typed text scored as the
    family's own MaskedLM head scores the text with its own mask token (the pipeline's top 5 at
    each mask), on the same pieces (no extra space piece before a mask)."""
    result = fill_mask(key, MANY, top_k=5)
    tok = zoo_reference(key)[0]
    read = MASK_PATTERN.sub(tok.mask_token, MANY)
    expected = _pipeline_top(key, read, 5)
    assert result.tokens == tuple(tok.convert_ids_to_tokens(tok(read)["input_ids"]))
    assert len(result.masks) == len(expected) == 4
    for mask, reference in zip(result.masks, expected):
        assert [p.token_id for p in mask.predictions] == [e["token"] for e in reference], key
        np.testing.assert_allclose([p.score for p in mask.predictions], [e["score"] for e in reference],
                                   atol=TOL + 1e-6)
