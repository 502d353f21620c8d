"""The "Why this guess" endpoint through gradio_client, against the running app."""

from __future__ import annotations

import json

import pytest
from gradio_client.exceptions import AppError

from models import ATTRIBUTION_METHODS, attribute_fill_mask, deletion_curve, fill_mask

KEY = "minilm-mlm"
TEXT = "She opened the [MASK] and walked into the room."


def test_endpoint_is_named(client):
    names = set(client.view_api(print_info=False, return_format="dict")["named_endpoints"])
    assert "/why_this_guess" in names


def test_why_this_guess_matches_the_core(client):
    status, shaded, plot, table = client.predict(
        TEXT, KEY, 1, "", 16, list(ATTRIBUTION_METHODS), api_name="/why_this_guess"
    )
    top = fill_mask(KEY, TEXT, top_k=1).masks[0].predictions[0]
    assert f"“{top.token}”" in status and f"p = {top.score:.4f}" in status
    assert "completeness gap" in status and "[MASK]" in status
    assert shaded.count('class="attribution-row"') == len(ATTRIBUTION_METHODS)
    figure = json.loads(plot["plot"])
    names = [trace["name"] for trace in figure["data"]]
    assert len(names) == len(ATTRIBUTION_METHODS) + 1 and names[-1].startswith("random order")
    loo_curve = deletion_curve(KEY, TEXT, "leave_one_out")
    loo_trace = next(t for t in figure["data"] if t["name"].startswith("leave-one-out"))
    assert loo_trace["y"] == pytest.approx(loo_curve.attributed, abs=1e-5)
    assert f"area {loo_curve.area:+.3f}" in loo_trace["name"]
    headers, rows = table["headers"], table["data"]
    loo = attribute_fill_mask(KEY, TEXT, "leave_one_out")
    column = headers.index("leave-one-out")
    got = [row[column] for row in rows]
    for value, score, candidate in zip(got, loo.scores, loo.candidates):
        if candidate:
            assert value == pytest.approx(score, abs=1e-4)
        else:
            assert value in (None, "", "NaN") or value != value  # not scored


def test_hostile_text_stays_text(client):
    text = "<img src=x onerror=alert(1)> opened the [MASK]."
    _, shaded, _, _ = client.predict(text, KEY, 1, "", 8, ["leave_one_out"], api_name="/why_this_guess")
    assert "<img" not in shaded and "&lt;" in shaded


@pytest.mark.parametrize(
    "args, message",
    [
        ((TEXT, KEY, 1, "", 16, []), "Tick at least one method"),
        ((TEXT, KEY, 2, "", 16, ["leave_one_out"]), r"no mask number 2: Mask number takes 1 to 1 \(1 is the first"),
        ((TEXT, KEY, 1, "unbelievably", 16, ["leave_one_out"]), "not one token"),
        ((TEXT, "minilm-l6", 1, "", 16, ["leave_one_out"]), "no trained masked-LM head"),
    ],
)
def test_bad_input_is_a_readable_error(client, args, message):
    with pytest.raises(AppError, match=message):
        client.predict(*args, api_name="/why_this_guess")
