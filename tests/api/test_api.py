"""The running app, called through gradio_client as any API user would."""

from __future__ import annotations

import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

from helpers import MLM_KEY


@pytest.fixture(scope="module")
def client(app_server):
    return Client(app_server, verbose=False, download_files=False)


def test_api_lists_named_endpoints(client):
    names = set(client.view_api(print_info=False, return_format="dict")["named_endpoints"])
    assert {"/fill_mask", "/fill_mask_live", "/list_models", "/model_card"} <= names


def test_fill_mask_endpoint(client):
    table, plot, filled, status = client.predict(
        "The capital of France is [MASK]. The [MASK] sat on the mat.", MLM_KEY, 4, api_name="/fill_mask"
    )
    assert table["headers"] == ["mask", "rank", "token", "probability"]
    rows = table["data"]
    assert len(rows) == 8
    assert [r[0] for r in rows] == [1] * 4 + [2] * 4
    probs = [r[3] for r in rows[:4]]
    assert probs == sorted(probs, reverse=True) and all(0 < p <= 1 for p in probs)
    assert "[MASK]" not in filled and filled.startswith("The capital of France is ")
    assert "2 mask(s)" in status
    assert plot is not None


def test_fill_mask_matches_the_core(client):
    from models import fill_mask

    table, *_ = client.predict("The [MASK] sat on the mat.", MLM_KEY, 5, api_name="/fill_mask")
    core = fill_mask(MLM_KEY, "The [MASK] sat on the mat.", 5)
    assert [r[2] for r in table["data"]] == [p.token for p in core.masks[0].predictions]
    for row, pred in zip(table["data"], core.masks[0].predictions):
        assert abs(row[3] - pred.score) < 1e-5


@pytest.mark.parametrize(
    ("text", "model", "words"),
    [
        ("No mask here.", MLM_KEY, "no mask"),
        ("", MLM_KEY, "empty"),
        ("The [MASK] sat.", "minilm-l6", "no trained masked-LM head"),
        ("The [MASK] sat.", "not-a-model", "not in the list of choices"),  # Gradio checks the dropdown
    ],
)
def test_bad_input_is_a_readable_error_and_the_app_keeps_serving(client, text, model, words):
    with pytest.raises(AppError) as info:
        client.predict(text, model, 5, api_name="/fill_mask")
    assert words.lower() in str(info.value).lower()
    table, *_ = client.predict("A [MASK] day.", MLM_KEY, 2, api_name="/fill_mask")
    assert len(table["data"]) == 2


def test_unavailable_model_is_explained(client):
    from models import list_models

    unavailable = [m for m in list_models() if not m.available and m.has_mlm_head]
    if not unavailable:
        pytest.skip("every online model is reachable from this machine")
    with pytest.raises(AppError) as info:
        client.predict("The [MASK] sat.", unavailable[0].key, 5, api_name="/fill_mask")
    assert "not available" in str(info.value)


def test_live_endpoint_never_raises(client):
    *_, status = client.predict("no mask yet", MLM_KEY, 5, True, api_name="/fill_mask_live")
    assert "Add [MASK]" in status
    *_, status = client.predict("[MASK] " * 30, MLM_KEY, 5, True, api_name="/fill_mask_live")
    assert "limit" in status


def test_models_endpoint(client):
    table = client.predict(api_name="/list_models")
    keys = [row[0] for row in table["data"]]
    assert MLM_KEY in keys and "bert-base" in keys and "modernbert-base" in keys
