"""The Compare tab's endpoints through gradio_client, against the core."""

from __future__ import annotations

import pytest
from gradio_client.exceptions import AppError

from components.compare.copy import LENGTH_CHOICES
from models import architecture_table, compare_fill_mask, get_device, get_spec, list_models
from models.compare.architecture import architecture_facts
from models.compare.benchmark import limits_for


ENDPOINTS = {"/architecture_table", "/compare_fill_mask", "/compare_tokens", "/benchmark_forward"}


def test_architecture_table(client):
    assert ENDPOINTS <= set(client.view_api(print_info=False, return_format="dict")["named_endpoints"])
    table = client.predict(api_name="/architecture_table")
    headers = table["headers"]
    rows = {row[0]: dict(zip(headers, row)) for row in table["data"]}
    for facts in architecture_table():
        assert rows[facts.model_key]["params (encoder)"] == f"{facts.params_total:,}"
    assert rows["modernbert-base"]["params (encoder)"] == "149,014,272"
    assert rows["modernbert-base"]["max context"] == 8192


def test_compare_fill_mask(client):
    keys = ["minilm-mlm", "splade-tiny", "bert-base"]
    text = "The capital of France is [MASK]."
    table, agreement, skipped = client.predict(keys, text, 3, api_name="/compare_fill_mask")
    core = compare_fill_mask(keys, text, 3)
    info = {m.key: m for m in list_models()}
    ran = [k for k in keys if info[k].available]  # bert-base too where the Hub is used and reachable
    assert table["headers"] == ["mask", "rank", *ran]
    assert len(table["data"]) == 3
    for column, result in zip(range(2, 2 + len(ran)), core.results):
        assert [row[column].rsplit(" (", 1)[0] for row in table["data"]] == [
            p.token for p in result.masks[0].predictions
        ]
    assert "Mask 1" in agreement
    if not next(m for m in list_models() if m.key == "bert-base").available:
        assert "bert-base" in skipped and "not available" in skipped


def test_compare_tokens(client):
    html, table, skipped = client.predict(["splade-tiny", "roberta-base"], "Tokenization works", api_name="/compare_tokens")
    assert "##ization" in html
    assert table["data"][0][0] == "splade-tiny" and table["data"][0][2] == 3  # token ##ization works


def test_benchmark_forward(client):
    plot, table, notes = client.predict(["splade-tiny"], ["32", "64"], 1, api_name="/benchmark_forward")
    assert [row[3] for row in table["data"]] == [32, 64]
    assert all(row[1] == "pretrained weights" for row in table["data"])
    assert "Peak memory" in notes and plot is not None


def test_benchmark_refuses_a_large_request(client):
    """The largest batch the slider allows and the shortest length on offer that together
    pass this device's cap on tokens per forward pass (CPU: 8 x 512 > 2,048)."""
    limits = limits_for(get_device())
    context = architecture_facts(get_spec("splade-tiny")).max_context
    over = [n for n in map(int, LENGTH_CHOICES) if n <= context and limits.max_batch * n > limits.max_tokens]
    if not over:  # a GPU: 64 x 512 = 32,768 tokens, far under its cap of 262,144
        pytest.skip(f"the tab cannot ask more than {limits.max_batch} x {context} tokens of splade-tiny here, "
                    f"within this device's cap of {limits.max_tokens:,} (tested in tests/unit/compare)")
    with pytest.raises(AppError, match="tokens per forward pass"):
        client.predict(["splade-tiny"], [str(over[0])], limits.max_batch, api_name="/benchmark_forward")
