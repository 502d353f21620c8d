"""The attention view builders on small hand-made results: escaping, bounds, bertviz HTML."""

from __future__ import annotations

import html
import json
import re

import numpy as np
import pytest

from components.attention import plots
from models import AttentionResult

HOSTILE = "</script><img src=x onerror=alert(1)>"
URLS = {
    "require": "gradio_api/file=/v/requirejs/require.js",
    "d3": "gradio_api/file=/v/d3/dist/d3.min.js",
    "jquery": "gradio_api/file=/v/jquery/dist/jquery.min.js",
}


def hand_result(tokens, layers=2, heads=3, pair_from=None) -> AttentionResult:
    t = len(tokens)
    rng = np.random.default_rng(0)
    w = rng.random((layers, heads, t, t)).astype(np.float32)
    w /= w.sum(-1, keepdims=True)
    segments = tuple(0 if pair_from is None or i < pair_from else 1 for i in range(t))
    return AttentionResult("hand-made", "x", None if pair_from is None else "y", tuple(tokens),
                           tuple(range(t)), segments, "single text", (0,) * t, (0,), (t - 1,), w, "eager")


def test_script_safe_json_round_trips_without_markup():
    value = {"tokens": [HOSTILE, "a & b", "<!--", "\u2028"]}
    text = plots.script_safe_json(value)
    assert not re.search("[<>&\u2028]", text)
    assert json.loads(text) == value


@pytest.mark.parametrize("view", ["head", "model"])
def test_bertviz_page_keeps_a_hostile_token_inside_its_json(view):
    result = hand_result(["[CLS]", HOSTILE, "bank", "[SEP]"])
    page = plots.bertviz_page(result, view, URLS)
    assert HOSTILE not in page and "<img" not in page
    assert page.count("</script>") == page.count("<script")  # every script ends where it should
    assert page.count("PYTHON_PARAMS") == 1  # the comment copy is not sent
    # the tokens survive for bertviz to draw as text
    params = re.search(r"const params = (\{.*?\}); //", page).group(1)
    assert json.loads(params)["attention"][0]["left_text"][1] == HOSTILE


def test_bertviz_page_loads_only_the_given_urls():
    page = plots.bertviz_page(hand_result(["a", "b"]), "model", URLS)
    assert re.findall(r'<script src="([^"]+)"', page) == [URLS["require"]]
    assert 'd3: "gradio_api/file=/v/d3/dist/d3.min"' in page
    assert 'jquery: "gradio_api/file=/v/jquery/dist/jquery.min"' in page
    assert not re.search(r"""(?:src=|d3:|jquery:)\s*["']https?://""", page)


def test_bertviz_weights_are_capped_and_rounded():
    result = hand_result([f"t{i}" for i in range(plots.BERTVIZ_MAX_TOKENS + 10)], layers=1, heads=1)
    attention, n = plots.bertviz_weights(result)
    assert n == plots.BERTVIZ_MAX_TOKENS and tuple(attention[0].shape) == (1, 1, n, n)
    values = attention[0].flatten().tolist()
    assert all(len(repr(v).split(".")[-1]) <= 3 for v in values)
    assert plots.truncation_note(result, len(result.tokens), "x") == ""  # exactly at the limit
    assert "the first 64" in plots.truncation_note(result, plots.BERTVIZ_MAX_TOKENS, "bertviz")


def test_iframe_escapes_the_whole_document():
    frame = plots.iframe('<p title="x">&amp; <script>1</script></p>', 'a "title"')
    srcdoc = re.fullmatch(r'.*srcdoc="([^"]*)"></iframe>', frame).group(1)
    assert "<" not in srcdoc and '"' not in srcdoc
    assert html.unescape(srcdoc) == '<p title="x">&amp; <script>1</script></p>'
    assert 'sandbox="allow-scripts"' in frame and "allow-same-origin" not in frame


def test_heatmap_labels_are_escaped_unique_and_capped():
    tokens = ["[CLS]", "<b>", "the", "the", "[SEP]"] + ["x"] * 200
    result = hand_result(tokens, layers=1, heads=1, pair_from=3)
    fig = plots.attention_heatmap(result, 0, 0)
    labels = list(fig.data[0].x)
    assert len(labels) == plots.VIEW_MAX_TOKENS == len(set(labels))
    assert labels[1] == "1 &lt;b&gt; ·A" and labels[3] == "3 the ·B"
    assert np.asarray(fig.data[0].z).shape == (plots.VIEW_MAX_TOKENS, plots.VIEW_MAX_TOKENS)


def test_heatmap_modes():
    result = hand_result(["a", "b", "c"])
    np.testing.assert_allclose(plots.heatmap_matrix(result, 1, None, "mean"), result.weights[1].mean(0))
    assert "rollout through layers 0–1" in plots.attention_heatmap(result, 1, mode="rollout").layout.title.text
    with pytest.raises(ValueError, match="Unknown heatmap mode"):
        plots.heatmap_matrix(result, 0, 0, "sideways")


def test_grid_cells_map_back_to_their_head():
    layout = plots.GridLayout(layers=6, heads=12)
    for layer, head in [(0, 0), (3, 5), (5, 11)]:
        x, y = layout.origin(layer, head)
        assert layout.cell_at(x, y) == (layer, head)
        assert layout.cell_at(x + layout.cell - 1, y + layout.cell - 1) == (layer, head)
    assert layout.cell_at(layout.left - 1, layout.top) is None  # the label margin
    assert layout.cell_at(layout.left + layout.cell, layout.top) is None  # a gap
    assert layout.cell_at(layout.width + 5, layout.top) is None


def test_grid_image_size_depends_on_the_model_not_the_text():
    short = plots.grid_image(hand_result(["a", "b", "c"]))[0]
    long = plots.grid_image(hand_result([f"t{i}" for i in range(300)]))[0]
    assert short.size == long.size == (plots.GridLayout(2, 3).width, plots.GridLayout(2, 3).height)
    assert short.mode == "P" and len(plots.png_bytes(long)) < 20_000


@pytest.mark.parametrize("n_tokens", [100, 20])  # more tokens than a cell's pixels (block maxima), fewer
def test_grid_image_cells_hold_each_heads_map_and_gaps_stay_white(n_tokens):
    result = hand_result([f"t{i}" for i in range(n_tokens)])
    image, layout = plots.grid_image(result)
    pixels = np.asarray(image)
    top = plots.GRID_SHADES - 1
    for layer in range(layout.layers):
        for head in range(layout.heads):
            w = result.weights[layer, head]
            expected = np.zeros((layout.cell, layout.cell))
            for i in range(layout.cell):  # each pixel from its own block of the map, written out
                for j in range(layout.cell):
                    rows = range(i * n_tokens // layout.cell, max(i * n_tokens // layout.cell + 1,
                                                                   (i + 1) * n_tokens // layout.cell))
                    cols = range(j * n_tokens // layout.cell, max(j * n_tokens // layout.cell + 1,
                                                                   (j + 1) * n_tokens // layout.cell))
                    expected[i, j] = max(w[r, c] for r in rows for c in cols)
            x, y = layout.origin(layer, head)
            shade = np.rint(np.sqrt(expected) * top)
            np.testing.assert_array_equal(pixels[y:y + layout.cell, x:x + layout.cell], shade)
            # the gap to the right of and below each cell is white (palette index 0)
            assert not pixels[y:y + layout.cell + layout.gap, x + layout.cell:x + layout.cell + layout.gap].any()
            assert not pixels[y + layout.cell:y + layout.cell + layout.gap, x:x + layout.cell + layout.gap].any()


def test_resample_keeps_a_thin_diagonal():
    eye = np.eye(100, dtype=np.float32)
    small = plots._resample(eye, 10)  # blocks of 10 x 10: the maximum keeps the diagonal at 1
    np.testing.assert_array_equal(small, np.eye(10))
    big = plots._resample(np.eye(3, dtype=np.float32), 6)  # nearest neighbour: 2 x 2 blocks
    np.testing.assert_array_equal(big, np.kron(np.eye(3), np.ones((2, 2))))


def test_stats_frame_columns_and_filter():
    from models import head_statistics

    stats = head_statistics(np.full((1, 2, 2, 2), 0.5), cls_positions=[0], sep_positions=[1])
    frame = plots.stats_frame(stats)
    assert list(frame.columns[:3]) == ["layer", "head", "entropy (bits)"] and len(frame) == 2
    assert frame["entropy (bits)"].tolist() == [1.0, 1.0]  # two tokens, uniform: 1 bit
    assert len(plots.stats_frame(stats, [(0, 1)])) == 1


def test_missing_libraries_are_said_in_the_ui(monkeypatch, tmp_path):
    import shutil

    from components.attention import copy as attention_copy

    from components.attention import tab as attention_tab

    from components.shell import vendor

    shutil.copy(vendor.VENDOR_DIR / "package-lock.json", tmp_path)  # the lock, no tarballs
    monkeypatch.setattr(vendor, "VENDOR_DIR", tmp_path)
    for cached in (vendor._lock, vendor.script):
        cached.cache_clear()
    try:
        assert vendor.library_urls() is None
        out = attention_tab.bertviz_view("A text.", "", "splade-tiny", "head")
    finally:
        monkeypatch.undo()
        for cached in (vendor._lock, vendor.script):
            cached.cache_clear()
    assert "assets/vendor/" in out and "<iframe" not in out
    assert html.escape(attention_copy.LIBS_MISSING) in out


def _title(figure) -> str:
    return figure.layout.title.text


def test_status_names_no_layer_or_head_that_a_click_would_leave_behind():
    """The grid, the table and the sliders change the heatmap but not the status line: the
    status names no layer or head, the heatmap's title says which one is shown."""
    from components.attention import tab as attention_tab

    _, status, figure, _, shown = attention_tab.attention(
        "I sat by the river bank.", "", "splade-tiny", 1, 1, "head")
    assert "layer 1, head 1" in _title(figure)
    assert "tokens" in status and not re.search(r"(layer|head) \d", status)
    *_, plot = attention_tab._open(shown, 0, 1)  # a grid cell or a table row opened later
    assert "layer 0, head 1" in _title(plot)


def test_status_says_an_asked_layer_or_head_beyond_the_model():
    from components.attention import tab as attention_tab

    _, status, figure, _, _ = attention_tab.attention("A text.", "", "splade-tiny", 7, 30, "head")
    assert "There is no layer 7 in this model (layers 0–1): layer 1 was opened." in status
    assert "no head 30" in status and "head 1 was opened" in status
    assert "layer 1, head 1" in _title(figure)


def test_input_embeddings_of_a_pair_on_a_one_row_segment_table_say_so():
    """RoBERTa-style models have one segment row (type_vocab_size 1): a pair uses segment A
    for both texts, and the summary says why instead of asking for a second text."""
    from components.attention import tab as attention_tab

    a, b = "I sat by the river bank.", "I deposited cash at the bank."
    *_, summary = attention_tab.show_input_embeddings(a, b, "mini-roberta")
    assert "Add a second text" not in summary
    assert "single row (type_vocab_size 1" in summary and "both texts add the same segment-A vector" in summary
    *_, one_text = attention_tab.show_input_embeddings(a, "", "mini-roberta")
    assert "Add a second text to see B." in one_text
    *_, bert_pair = attention_tab.show_input_embeddings(a, b, "mini-bert")
    assert "The two segment vectors differ" in bert_pair and "single row" not in bert_pair


def test_byte_level_space_mark_shows_as_fill_mask_shows_a_space():
    """mini-roberta's byte-level BPE writes "Ġsat" for " sat": the axes, the token strip and
    the input-embeddings table show it "␣sat", as fill-mask's guesses do; bertviz and the core
    keep the vocabulary entry."""
    from components.attention import tab as attention_tab

    text = "I sat by the river bank."
    tokens, _, figure, _, _ = attention_tab.attention(text, "", "mini-roberta", 0, 0, "head")
    assert "Ġsat" in attention_tab._result(text, "", "mini-roberta").tokens
    assert "2 ␣sat" in figure.data[0].x and "2 ␣sat" in figure.data[0].y
    assert not any("Ġ" in label for label in figure.data[0].x)
    assert ("␣sat ", "segment A") in tokens and not any("Ġ" in t for t, _ in tokens)
    embeddings_figure, frame, _ = attention_tab.show_input_embeddings(text, "", "mini-roberta")
    assert "␣sat" in list(frame["token"]) and not any("Ġ" in t for t in frame["token"])
    assert "2 ␣sat" in embeddings_figure.data[0].y
    # WordPiece tokens are unchanged
    tokens, _, figure, _, _ = attention_tab.attention(text, "", "mini-bert", 0, 0, "head")
    assert ("sat ", "segment A") in tokens and "2 sat" in figure.data[0].x


def test_the_statistics_table_says_how_many_heads_pass_and_why_none_do():
    """A filter that no head passes left an empty table with no word; the label now counts the
    heads it lists and, when none passes, gives the highest value any head reaches."""
    from components.attention import tab as attention_tab
    from models import HEAD_FILTERS, extract_attention, head_statistics

    text, key = "I sat by the river bank.", "splade-tiny"
    stats = head_statistics(extract_attention(key, text))
    total = stats.to_self.size
    shown = attention_tab.attention(text, "", key, 0, 0, "head")[-1]
    everything = attention_tab.filter_stats(shown, attention_tab.ALL_HEADS)
    assert everything["label"] == f"Per-head statistics (all {total} heads)" and len(everything["value"]) == total
    seen_empty = seen_some = False
    for which, (stat, at_least) in HEAD_FILTERS.items():
        update = attention_tab.filter_stats(shown, which)
        values = getattr(stats, stat)
        passing = int((values >= at_least).sum())
        assert len(update["value"]) == passing
        if passing:
            seen_some = True
            assert f": {passing} of {total} heads " in update["label"]
        else:
            seen_empty = True
            layer, head = np.unravel_index(np.argmax(values), values.shape)
            assert f"none of the {total} heads" in update["label"]
            assert f"is {values.max():.2f} (layer {layer}, head {head})" in update["label"]
    assert seen_empty and seen_some  # both cases occur on this text


def test_the_input_sub_tabs_help_names_the_pickers_models_it_refuses():
    """The Attention picker is shared: mini-deberta and mini-modernbert (relative / rotary
    positions) draw attention but "Show token + position + segment" refuses them. The sub-tab's
    help names exactly the picker's models it refuses (before: families only, "DeBERTa-v3,
    ModernBERT", not the keys the picker shows)."""
    import gradio as gr

    from components.attention import tab as attention_tab
    from models import list_models

    available = {m.key for m in list_models() if m.available}
    with gr.Blocks() as demo, gr.Tabs():
        attention_tab.build_attention_tab()
    (picker,) = [b for b in demo.blocks.values() if isinstance(b, gr.Dropdown) and b.label == "Model"]
    (help_text,) = [b.value for b in demo.blocks.values()
                    if isinstance(b, gr.Markdown) and "input = token + position + segment" in (b.value or "")]
    refused = set()
    for _, key in picker.choices:
        if key not in available:
            continue
        try:
            attention_tab.show_input_embeddings("The bank was closed.", "", key)
        except gr.Error as error:
            assert "no table of absolute position vectors" in str(error)
            refused.add(key)
    assert refused >= {"mini-deberta", "mini-modernbert"}
    named = set(re.findall(r"`([\w.-]+)`", help_text.split("In the picker:")[1]))
    assert refused == named & available
