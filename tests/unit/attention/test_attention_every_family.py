"""The Attention tab for every family of the mini zoo, from plain text through the tab's own
handlers (``components.attention.tab``), as a click sends it.

The reference is a second copy of each model, loaded by transformers' Auto classes from the
family's folder (``helpers.zoo_reference``): its ``output_attentions`` for the heatmap, the
rollout, the statistics and bertviz; its own embedding tables, read by hand, for the input sum.
"""

from __future__ import annotations

import html
import json
import re

import gradio as gr
import numpy as np
import pytest
import torch

from components.attention import tab
from helpers import parity_atol, plotly_array, zoo_encode, zoo_reference
from models import ZOO_KEYS, get_spec

TEXT = "The old mill by the river turned slowly."
PAIR = "Cash sat in the bank."
ATOL = parity_atol()


def _attentions(key: str, text: str, pair: str | None = None, causal: bool = False):
    """(tokenizer output, (L, H, T, T) weights) of the reference model; ``causal``: a causal
    mask built here, -inf above the diagonal, passed as transformers' 4-D additive mask."""
    tok, model = zoo_reference(key)
    enc = tok(text, pair, return_tensors="pt")
    inputs = zoo_encode(key, text, pair)
    if causal:
        t = enc["input_ids"].shape[1]
        blocked = torch.ones(t, t, dtype=torch.bool).triu(1)
        inputs["attention_mask"] = torch.zeros(1, 1, t, t).masked_fill(blocked, torch.finfo(torch.float32).min)
    with torch.no_grad():
        attentions = model(**inputs, output_attentions=True).attentions
    return enc, torch.stack([a[0] for a in attentions]).numpy()


def _rollout(weights: np.ndarray) -> np.ndarray:
    """Abnar & Zuidema's rollout as their paper writes it: head mean + identity, rows renormalised,
    the layers multiplied in order (L, T, T)."""
    t = weights.shape[-1]
    out, current = [], np.eye(t)
    for layer in weights:
        a = layer.mean(0) + np.eye(t)
        current = (a / a.sum(-1, keepdims=True)) @ current
        out.append(current)
    return np.stack(out)


def _z(figure) -> np.ndarray:
    return plotly_array(json.loads(figure.to_json())["data"][0]["z"])


@pytest.mark.parametrize("key", ZOO_KEYS)
def test_heatmap_modes_and_segments_are_transformers_own_attention(key):
    enc, weights = _attentions(key, TEXT, PAIR)
    tok = zoo_reference(key)[0]
    layers, heads = weights.shape[:2]
    layer, head = layers - 1, heads - 1
    segments, status, figure, _, shown = tab.attention(TEXT, PAIR, key, layer, head, "head")
    # the strip shows byte-level BPE's space mark "Ġ" as "␣", as fill-mask's guesses read
    assert [t.rstrip(" ") for t, _ in segments] == [
        t.replace("\u0120", "␣") for t in tok.convert_ids_to_tokens(enc["input_ids"][0])]
    # segment A up to the first text's last token, B for the second text's tokens, B at the end
    words = enc.sequence_ids(0)
    seen = [label[-1] for _, label in segments]
    assert all(seen[i] == "AB"[s] for i, s in enumerate(words) if s is not None)
    assert seen[0] == "A" and seen[-1] == "B"
    if "token_type_ids" in enc:
        assert seen == ["AB"[int(s)] for s in enc["token_type_ids"][0]]
    assert f"{len(words)} tokens**, {layers} layers × {heads} heads" in status
    np.testing.assert_allclose(_z(figure), weights[layer, head], atol=ATOL)
    mean = tab.heatmap(shown, 1, 0, "mean")
    np.testing.assert_allclose(_z(mean), weights[1].mean(0), atol=ATOL)
    rollout = tab.heatmap(shown, layer, 0, "rollout")
    np.testing.assert_allclose(_z(rollout), _rollout(weights)[layer], atol=10 * ATOL)


@pytest.mark.parametrize("key", ZOO_KEYS)
def test_grid_file_holds_every_heads_reference_map_and_is_made_once(key, monkeypatch):
    """The grid goes to the page as a PNG file: decoded, each cell is the reference model's
    map of that head (nearest pixel, sqrt shading); another layer, head or mode of the same
    text hands the same file without encoding it again."""
    from PIL import Image

    from components.attention import plots

    _, weights = _attentions(key, TEXT, PAIR)
    layers, heads, t = weights.shape[:3]
    encoded = []
    real_png_bytes = plots.png_bytes
    monkeypatch.setattr(plots, "png_bytes", lambda image: encoded.append(1) or real_png_bytes(image))
    text = TEXT + " " + key  # a text no other test has shown: its result is made here
    *_, path, shown = tab.attention(text, PAIR, key, 0, 0, "head")
    *_, again, _ = tab.attention(text, PAIR, key, layers - 1, heads - 1, "mean")
    assert again == path and len(encoded) == 1 and path.endswith(".png")
    _, weights = _attentions(key, text, PAIR)
    t = weights.shape[-1]
    with Image.open(path) as image:
        assert image.mode == "P"
        pixels = np.asarray(image)
    layout = plots.GridLayout(layers, heads)
    nearest = np.arange(layout.cell) * t // layout.cell  # t < cell here: each pixel from one weight
    for layer in range(layers):
        for head in range(heads):
            x, y = layout.origin(layer, head)
            expected = np.rint(np.sqrt(weights[layer, head][np.ix_(nearest, nearest)]) * (plots.GRID_SHADES - 1))
            # float32 weights within the tolerance of the parity tests may round to the next shade
            diff = np.abs(pixels[y:y + layout.cell, x:x + layout.cell] - expected)
            assert diff.max() <= 1 and (diff == 0).mean() > 0.99, (layer, head)


@pytest.mark.parametrize("key", ZOO_KEYS)
def test_head_statistics_table_from_the_reference_weights(key):
    enc, w = _attentions(key, TEXT)
    tok = zoo_reference(key)[0]
    ids = enc["input_ids"][0].tolist()
    cls = [i for i, t in enumerate(ids) if t == tok.cls_token_id]
    sep = [i for i, t in enumerate(ids) if t == tok.sep_token_id]
    assert cls == [0] and sep == [len(ids) - 1]  # <s>/[CLS] first, </s>/[SEP] last, for every family
    frame = tab.head_stats(TEXT, "", key, tab.ALL_HEADS)
    layers, heads, t = w.shape[:3]
    assert list(zip(frame["layer"], frame["head"])) == [(a, b) for a in range(layers) for b in range(heads)]
    rows = np.arange(t)
    expected = {
        "→ [CLS]": w[..., 0].mean(-1),
        "→ [SEP]": w[..., t - 1].mean(-1),
        "→ self": w[..., rows, rows].mean(-1),
        "→ previous": w[..., rows[1:], rows[1:] - 1].mean(-1),
        "→ next": w[..., rows[:-1], rows[:-1] + 1].mean(-1),
        "entropy (bits)": -(w * np.log2(np.clip(w, 1e-30, None))).sum(-1).mean(-1),
        "max weight": w.max(-1).mean(-1),
    }
    for column, values in expected.items():
        np.testing.assert_allclose(frame[column].to_numpy(), values.reshape(-1), atol=6e-4, err_msg=column)


@pytest.mark.parametrize("key", ZOO_KEYS)
def test_bertviz_page_carries_the_reference_weights(key):
    enc, weights = _attentions(key, TEXT)
    tok = zoo_reference(key)[0]
    page = html.unescape(tab.bertviz_view(TEXT, "", key, "head"))
    params = json.loads(re.search(r"const params = (\{.*?\}); //", page).group(1))
    (shown,) = params["attention"]  # one text: the one "all tokens" view
    tokens = tok.convert_ids_to_tokens(enc["input_ids"][0])
    assert shown["left_text"] == [t.replace("Ġ", " ").replace("▁", " ") for t in tokens]  # bertviz's prettify
    np.testing.assert_allclose(np.asarray(shown["attn"]), weights, atol=1e-3 + ATOL)


@pytest.mark.parametrize("key", ZOO_KEYS)
def test_causal_attention_is_the_reference_under_a_causal_mask(key):
    if not get_spec(key).can("causal"):  # DeBERTa builds its own mask: the tab says so
        with pytest.raises(gr.Error, match="cannot take a causal mask"):
            tab.attention(TEXT, "", key, 0, 0, "head", True)
        return
    _, weights = _attentions(key, TEXT, causal=True)
    upper = np.triu(np.ones(weights.shape[-2:], dtype=bool), 1)
    assert (weights[..., upper] == 0).all()  # the hand-made mask reached every layer
    _, status, figure, _, shown = tab.attention(TEXT, "", key, 1, 2, "head", True)
    assert "causal" in status.lower()
    np.testing.assert_allclose(_z(figure), weights[1, 2], atol=ATOL)
    last = weights.shape[0] - 1
    np.testing.assert_allclose(_z(tab.heatmap(shown, last, 0, "head")), weights[last, 0], atol=ATOL)


@pytest.mark.parametrize("key", ZOO_KEYS)
def test_input_embeddings_are_the_sum_of_the_models_own_table_rows(key):
    """Token + position + segment rows, looked up here in the reference model's own tables;
    DeBERTa and ModernBERT have no position table: the tab says where their positions go."""
    tok, model = zoo_reference(key)
    emb = model.embeddings
    if not isinstance(getattr(emb, "position_embeddings", None), torch.nn.Embedding):
        with pytest.raises(gr.Error, match="no table of absolute position vectors"):
            tab.show_input_embeddings(TEXT, PAIR, key)
        return
    _, frame, summary = tab.show_input_embeddings(TEXT, PAIR, key)
    enc = tok(TEXT, PAIR)
    ids = enc["input_ids"]
    pad = getattr(emb, "padding_idx", None)  # RoBERTa's positions start after its padding row
    positions = [pad + 1 + i for i in range(len(ids))] if get_spec(key).family == "roberta" else list(range(len(ids)))
    # [CLS] A [SEP] is segment 0, B [SEP] segment 1, where the table has a row for it (not RoBERTa's one row)
    second = enc.sequence_ids().index(1)
    two = int(getattr(model.config, "type_vocab_size", 0) or 0) > 1
    segments = [int(two and i >= second) for i in range(len(ids))]
    with torch.no_grad():
        token = emb.word_embeddings.weight[ids]
        position = emb.position_embeddings.weight[positions]
        total = token + position
        table = getattr(emb, "token_type_embeddings", None)
        if table is not None:
            total = total + table.weight[segments]
    assert frame["token id"].tolist() == ids and frame["position row"].tolist() == positions
    np.testing.assert_allclose(frame["|token|"], token.norm(dim=-1).numpy(), atol=1e-4)
    np.testing.assert_allclose(frame["|position|"], position.norm(dim=-1).numpy(), atol=1e-4)
    np.testing.assert_allclose(frame["|sum|"], total.norm(dim=-1).numpy(), atol=1e-4)
    if table is not None:
        assert frame["segment row"].tolist() == list(segments)
    else:
        assert "no segment table" in summary
    assert (frame["max |sum − model input|"] < 1e-4).all()
