"""The "Inside one layer" endpoints through gradio_client, on the running app, from plain text."""

from __future__ import annotations

import json

import numpy as np
import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

from helpers import plotly_array
from models import forward_steps, mlm_gradients

KEY = "mini-deberta"
TEXT = "The old mill by the [MASK] turned slowly."


def test_named_endpoints(client):
    names = set(client.view_api(print_info=False, return_format="dict")["named_endpoints"])
    assert {"/inside_layer", "/inside_step", "/mlm_gradients"} <= names


def test_inside_layer_shows_the_core_pass(client):
    status, step_text, plot, row, checks, norms, step, layer, head = client.predict(
        KEY, TEXT, 1, 2, None, "deberta_c2p", api_name="/inside_layer")
    core = forward_steps(KEY, TEXT, None, 1, 2)
    assert f"**{len(core.tokens)} tokens**" in status and "layer 1, head 2" in status and "eager" in status
    assert "Content → position" in step_text and f"(T, T) = ({len(core.tokens)}, {len(core.tokens)})" in step_text
    heat = json.loads(plot["plot"])["data"][0]
    np.testing.assert_allclose(plotly_array(heat["z"]), core.step("deberta_c2p").value, atol=1e-6)
    assert "✗" not in checks and checks.count("✓") == len(core.checks)
    assert "★ DeBERTa at (i=1, j=2)" in checks
    # the chosen token's row, number by number: softmax column and the Σ row
    columns, data = row["headers"], row["data"]
    softmax = [r[columns.index("softmax")] for r in data[:-1]]
    np.testing.assert_allclose(softmax, core.step("weights").value[core.position], atol=1e-5)
    assert data[-1][columns.index("weight × v[0]")] == pytest.approx(
        float(core.step("weighted_values").value[core.position, 0]), abs=1e-5)
    assert (step["value"], layer["value"], head["value"]) == ("deberta_c2p", 1, 2)
    assert ["7. ★ Content → position", "deberta_c2p"] in step["choices"]
    assert (layer["maximum"], head["maximum"]) == (3, 3)


def test_inside_step_endpoint(client):
    text, plot = client.predict("mini-modernbert", TEXT, 1, 0, None, "query", api_name="/inside_step")
    assert "Query after rotation" in text and "★ *modernbert*" in text


def test_out_of_range_is_a_readable_error(app_server):
    client = Client(app_server, verbose=False, download_files=False)  # sliders not yet fitted to a model
    with pytest.raises(AppError, match="layer must be a whole number from 0 to 3; got 9"):
        client.predict(KEY, TEXT, 9, 0, None, "query", api_name="/inside_layer")
    with pytest.raises(AppError, match="reads at most 128 tokens"):
        client.predict(KEY, "word " * 300, 0, 0, None, "query", api_name="/inside_layer")
    with pytest.raises(AppError, match="no trained masked-LM head"):
        client.predict("minilm-l6", "The cat sat on the mat.", "", api_name="/mlm_gradients")


def test_mlm_gradients_endpoint(client):
    plot, note = client.predict("mini-bert", "The cat sat on the mat near the old house.", "3",
                                api_name="/mlm_gradients")
    core = mlm_gradients("mini-bert", "The cat sat on the mat near the old house.", [3])
    bars = json.loads(plot["plot"])["data"]
    np.testing.assert_allclose(plotly_array(bars[0]["y"]), core.embedding_grad_norms, rtol=1e-5)
    logits = plotly_array(bars[1]["y"])
    assert logits[3] > 0 and all(logits[i] == 0 for i in core.unmasked)
    assert "Largest ‖∂loss/∂logits‖ at an unmasked position: **0**" in note
