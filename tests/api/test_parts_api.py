"""The "Which parts matter" endpoints through gradio_client, on the running app, from plain
text: each answer is the core's own, and bad input is a readable error naming the argument."""

from __future__ import annotations

import json

import numpy as np
import pytest
from gradio_client.exceptions import AppError

from helpers import plotly_array
from models import ablate_heads, head_importance, logit_lens, patch_activations

KEY = "mini-albert"
TEXT = "The capital of France is [MASK]."
CORRUPT = "The capital of Italy is [MASK]."


def test_named_endpoints(client):
    names = set(client.view_api(print_info=False, return_format="dict")["named_endpoints"])
    assert {"/ablate_heads", "/head_importance", "/logit_lens", "/patch_activations", "/trace_presets"} <= names


def test_ablate_heads_endpoint(client):
    status, bars, table, grid = client.predict(TEXT, KEY, "2:0", "paris", "mean", api_name="/ablate_heads")
    core = ablate_heads(KEY, TEXT, [(2, 0)], "paris", "mean")
    assert f"{core.p_target_after:.4f} without the chosen ones" in status and "(mean)" in status
    after = json.loads(bars["plot"])["data"][1]
    np.testing.assert_allclose(plotly_array(after["y"]), [g.probability for g in core.masks[0].after], atol=1e-6)
    assert grid["data"][2][1] == "✕" and sum(row.count("✕") for row in grid["data"]) == 1


def test_head_importance_endpoint(client):
    status, figure, table = client.predict(TEXT, KEY, "", api_name="/head_importance")
    core = head_importance(KEY, TEXT)
    z = plotly_array(json.loads(figure["plot"])["data"][0]["z"])
    np.testing.assert_allclose(z, core.delta_log_p, atol=1e-6)
    assert f"p = {core.p_target:.4f}" in status


def test_logit_lens_endpoint_side_by_side(client):
    status, figure, first, second = client.predict(TEXT, KEY, "mini-modernbert", api_name="/logit_lens")
    for lens, frame in ((logit_lens(KEY, TEXT), first), (logit_lens("mini-modernbert", TEXT), second["value"])):
        column = 3  # p(the final answer), headed by the answer as the page shows it
        assert frame["headers"][column].startswith("p(") and frame["headers"][column] != "p(top)"
        np.testing.assert_allclose([row[column] for row in frame["data"]], lens.p_target, atol=1e-4)
    assert "ModernBERT" in status and "final LayerNorm" in status


def test_patch_activations_endpoint(client):
    status, figure, table = client.predict(TEXT, CORRUPT, KEY, "", api_name="/patch_activations")
    core = patch_activations(KEY, TEXT, CORRUPT)
    np.testing.assert_allclose(plotly_array(json.loads(figure["plot"])["data"][0]["z"]), core.p_patched, atol=1e-6)
    assert f"{core.p_clean:.4f} in the clean run" in status
    presets = client.predict(KEY, api_name="/trace_presets")
    assert presets["choices"] and presets["value"] == "0"


def test_bad_input_is_a_readable_error(client):
    with pytest.raises(AppError, match=r"heads\[0\]: the head must be a whole number from 0 to 3"):
        client.predict(TEXT, KEY, "0:7", "", "zero", api_name="/ablate_heads")
    with pytest.raises(AppError, match="clean_text is 9 tokens and corrupt_text is 10 tokens"):
        client.predict(TEXT, "The capital of the Netherlands is [MASK].", KEY, "", api_name="/patch_activations")
    with pytest.raises(AppError, match="no mask"):
        client.predict("The capital of France is Paris.", KEY, "", api_name="/head_importance")
    status, *_ = client.predict(TEXT, KEY, "", api_name="/head_importance")  # the app keeps serving
    assert "p = " in status
