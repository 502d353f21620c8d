"""The Attention tab's endpoints through gradio_client, on the running app."""

from __future__ import annotations

import html
import json
import re
import urllib.request

import pytest
from gradio_client.exceptions import AppError

from models import head_statistics, extract_attention, filter_heads

KEY = "minilm-l6"
A, B = "I sat by the river bank.", "I deposited cash at the bank."


def test_named_endpoints(client):
    names = set(client.view_api(print_info=False, return_format="dict")["named_endpoints"])
    assert {"/attention", "/head_stats", "/bertviz_view"} <= names


def test_the_pages_click_is_one_event_with_every_view(app_server):
    """"Show attention" fires one event that fills the views, the fitted sliders and the
    statistics, with nothing chained after it (each event more costs the page a copy of every
    updated component's state at each of its status changes: ``arrive``'s docstring)."""
    from bench import classroom

    with urllib.request.urlopen(app_server.rstrip("/") + "/config", timeout=60) as resp:
        config = json.loads(resp.read())
    app = classroom.AppConfig(config)
    show = app.clicked(classroom.SHOW_ATTENTION)
    assert app.chained(show) == []
    outputs = next(d["outputs"] for d in config["dependencies"] if d["id"] == show.fn_index)
    labels = {c.get("props", {}).get("label") for c in config["components"] if c["id"] in outputs}
    assert {"Tokens and segment ids", "Attention heatmap", "Layer", "Head", "Per-head statistics"} <= labels


def _figure(plot) -> dict:
    return json.loads(plot["plot"])


def test_attention_endpoint_matches_the_core(client):
    tokens, status, plot, image = client.predict(A, B, KEY, 2, 3, "head", api_name="/attention")
    core = extract_attention(KEY, A, B)
    assert [t["token"].strip() for t in tokens] == list(core.tokens)
    assert [t["class_or_confidence"] for t in tokens] == [f"segment {'AB'[s]}" for s in core.segment_ids]
    assert "17 tokens" in status and "6 layers × 12 heads" in status and "token_type_ids" in status
    figure = _figure(plot)
    assert "layer 2, head 3" in figure["layout"]["title"]["text"]
    assert figure["data"][0]["type"] == "heatmap" and len(figure["data"][0]["x"]) == 17
    assert image["url"].endswith(".png")


def test_long_input_is_cut_for_the_views(client):
    text = " ".join(["word"] * 200)
    _, status, plot, _ = client.predict(text, "", KEY, 0, 0, "mean", api_name="/attention")
    assert "202 tokens" in status and "first 128" in status
    assert len(_figure(plot)["data"][0]["x"]) == 128


def test_layer_out_of_range_is_clamped_and_said(client):
    _, status, plot, _ = client.predict(A, "", KEY, 40, 0, "rollout", api_name="/attention")
    assert "There is no layer 40 in this model (layers 0–5): layer 5 was opened." in status
    assert "rollout through layers 0–5" in _figure(plot)["layout"]["title"]["text"]


def test_head_stats_endpoint_and_filters(client):
    table = client.predict(A, B, KEY, "all heads", api_name="/head_stats")
    assert table["headers"][:3] == ["layer", "head", "entropy (bits)"] and len(table["data"]) == 72
    stats = head_statistics(extract_attention(KEY, A, B))
    first = table["data"][0]
    assert first[table["headers"].index("→ [CLS]")] == pytest.approx(stats.to_cls[0, 0], abs=5e-4)
    for name in ("attend to [CLS]", "attend to the previous token", "broad (high entropy)"):
        rows = client.predict(A, B, KEY, name, api_name="/head_stats")["data"]
        assert [(r[0], r[1]) for r in rows] == filter_heads(stats, name)


def test_bertviz_endpoint_serves_its_libraries_itself(client, app_server):
    frame = client.predict(A, B, KEY, "model", api_name="/bertviz_view")
    match = re.search(r'srcdoc="([^"]*)"', frame)
    assert frame.startswith("<iframe") and 'sandbox="allow-scripts"' in frame and match
    page = html.unescape(match.group(1))
    assert "<script" not in match.group(1)  # the document is attribute-escaped
    urls = re.findall(r'<script src="([^"]+)"', page) + re.findall(r'(?:d3|jquery): "([^"]+)"', page)
    # A fixed route: nothing in the URLs says where the app lives on the machine.
    assert sorted(urls) == ["vendor/d3", "vendor/jquery", "vendor/require.js"]
    assert not re.search(r"""(?:src=|paths[^}]*)["']https?://""", page)
    for url in urls:
        suffix = "" if url.endswith(".js") else ".js"
        with urllib.request.urlopen(app_server + url + suffix, timeout=10) as resp:
            assert resp.status == 200 and len(resp.read()) > 10_000


def test_bertviz_endpoint_keeps_markup_as_text(client):
    frame = client.predict('The <img src=x onerror="alert(1)"> bank.', "", KEY, "head", api_name="/bertviz_view")
    page = html.unescape(re.search(r'srcdoc="([^"]*)"', frame).group(1))
    assert "<img" not in page and "\\u003c" in page


@pytest.mark.parametrize(
    ("text", "model", "words"),
    [("", KEY, "empty"), (A, "roberta-base", "not available")],
)
def test_bad_input_is_readable(client, text, model, words):
    from models import list_models

    if model != KEY and {m.key: m for m in list_models()}[model].available:
        pytest.skip("roberta-base is reachable from this machine")
    for api_name, extra in (("/attention", (0, 0, "head")), ("/head_stats", ("all heads",)), ("/bertviz_view", ("head",))):
        with pytest.raises(AppError) as info:
            client.predict(text, "", model, *extra, api_name=api_name)
        assert words in str(info.value).lower()
