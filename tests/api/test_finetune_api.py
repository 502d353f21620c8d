"""The "Fine-tuning & search" tab's endpoints through gradio_client, against the running app."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from gradio_client.exceptions import AppError

from helpers import ENCODER_KEY, MLM_KEY, plotly_array
from models import list_tasks, probe_layers, retrieval_report, search


def test_finetune_endpoints_are_named(client):
    names = set(client.view_api(print_info=False, return_format="dict")["named_endpoints"])
    assert {"/list_tasks", "/train_classifier", "/classify", "/probe_layers", "/search",
            "/retrieval_report"} <= names


def test_list_tasks(client):
    table = client.predict(api_name="/list_tasks")
    assert [row[0] for row in table["data"]] == [t.name for t in list_tasks()]


def test_train_then_classify(client):
    plot, summary, head_id = client.predict(ENCODER_KEY, "fiction-speech", "mean", -1, True, 5, 0, 0,
                                            api_name="/train_classifier")
    assert plot is not None and head_id.startswith(f"{ENCODER_KEY}/fiction-speech/")
    assert "770 parameters" in summary and "majority baseline 50.0%" in summary  # 2 x 384 + 2
    html = client.predict(head_id, "<b>The Congress</b> must act on the budget.", api_name="/classify")
    assert "<b>The" not in html and ("speech" in html or "fiction" in html)


def test_classify_without_a_head_is_a_readable_error(client):
    with pytest.raises(AppError, match="Train a head first"):
        client.predict("", "Hello there.", api_name="/classify")
    # the explanation's button too: the page's step to take, not an empty id and an API name
    with pytest.raises(AppError, match=r"Train a head first \(the button above\), then ask which words") as why:
        client.predict("", "Hello there.", api_name="/why_this_class")
    assert "''" not in str(why.value) and "train_classifier" not in str(why.value)


def test_search_matches_the_core(client):
    query = "The whale dived under the ship."
    table, note = client.predict(query, ENCODER_KEY, "mean", "exact", 5, api_name="/search")
    core = search(ENCODER_KEY, query, k=5, pooling="mean", index="exact")
    assert [row[3] for row in table["data"]] == [h.text for h in core.hits]
    assert [row[2] for row in table["data"]] == [h.source for h in core.hits]
    assert "exact index" in note


def test_why_this_class_through_the_api(client):
    from models import CLASS_ATTRIBUTION_METHODS, attribute_classification

    _, _, head_id = client.predict(ENCODER_KEY, "fiction-speech", "mean", -1, True, 3, 60, 0,
                                   api_name="/train_classifier")
    text = "The President asked Congress to <b>approve</b> the budget."
    table, note = client.predict(head_id, text, api_name="/why_this_class")
    assert table["headers"] == ["position", "token", *CLASS_ATTRIBUTION_METHODS]
    # Before the button, the page's empty table already has these headers (not 1, 2, 3).
    empty = next(c["props"]["value"] for c in client.config["components"]
                 if c.get("props", {}).get("elem_id") == "why-class-table")
    assert empty == {"headers": table["headers"], "data": [], "metadata": None}
    assert "Explaining" in note and "<b>" not in note
    with pytest.raises(AppError, match="No trained head"):
        client.predict("nope/none/0", text, api_name="/why_this_class")


def test_probe_layers_matches_the_core(client):
    # The smallest embedded encoder and the smallest task keep this to seconds.
    plot = client.predict(MLM_KEY, "fiction-speech", "mean", api_name="/probe_layers")
    validation, training, baseline = json.loads(plot["plot"])["data"]
    core = probe_layers(MLM_KEY, "fiction-speech", pooling="mean")  # the endpoint's defaults
    assert plotly_array(validation["x"]).tolist() == list(core.layers)
    # Two processes may sum in another order: at most two of the 200 validation sentences move.
    np.testing.assert_allclose(plotly_array(validation["y"]), core.validation_accuracy, atol=0.011)
    np.testing.assert_allclose(plotly_array(training["y"]), core.train_accuracy, atol=0.011)
    assert plotly_array(baseline["y"]).tolist() == [core.majority_baseline] * 2


def _percent(pattern: str, text: str) -> float:
    found = re.search(pattern, text)
    assert found, f"{pattern!r} not in {text!r}"
    return float(found.group(1)) / 100


def test_retrieval_report_matches_the_core(client):
    text = client.predict(MLM_KEY, "mean", 5, api_name="/retrieval_report")
    core = retrieval_report(MLM_KEY, k=5, pooling="mean")
    tolerance = 0.0021  # 1,000 top-5 slots: float noise between processes may move two
    assert _percent(r"ANN recall@5: ([\d.]+)%", text) == pytest.approx(core.ann_recall, abs=tolerance)
    assert _percent(r"keeps ([\d.]+)% of the cosine", text) == pytest.approx(core.dot_overlap, abs=tolerance)
    low, median, high = core.norm_spread
    assert f"from {low:.2f} to {high:.2f}, median {median:.2f}" in text
    assert f"({core.queries} queries, {core.corpus_size:,} sentences)" in text
    assert f"({core.pooling_queries} queries)" in text
    for name, pooling in (("[CLS]", "cls"), ("mean", "mean")):
        shown = _percent(re.escape(name) + r" ([\d.]+)%", text)
        assert shown == pytest.approx(core.pooling_recall[pooling], abs=1 / core.pooling_queries)


def test_retrieve_then_read_matches_the_core(client):
    from models import retrieve_then_read

    question = "Where does Iceland's government sit?"
    text, table, plot = client.predict(question, 3, api_name="/retrieve_then_read")
    core = retrieve_then_read(question, k=3)
    column = {name: i for i, name in enumerate(table["headers"])}
    assert [row[column["passage"]] for row in table["data"]] == [p.text for p in core.passages]
    assert [row[column["span read"]] for row in table["data"]] == [p.answer for p in core.passages]
    assert f"**Answer: {core.answer}**" in text and core.answer == "Reykjavik"
    bars = json.loads(plot["plot"])["data"][0]
    assert bars["y"][:3] == ["encode the question", "search the index", "read the passages"]
    with pytest.raises(AppError, match="less than minimum value 1"):  # the slider's own range
        client.predict(question, 0, api_name="/retrieve_then_read")
    with pytest.raises(AppError, match="question"):
        client.predict("   ", 3, api_name="/retrieve_then_read")


def test_sentiment_and_entities_show_their_baselines(client):
    """The summary's table is the core's scores; a token task's answer tags every word."""
    from models import train_classifier

    _, summary, head_id = client.predict(MLM_KEY, "sentiment", "mean", -1, True, 5, 0, 0,
                                         api_name="/train_classifier")
    core = train_classifier(MLM_KEY, "sentiment", pooling="mean", layer=-1, epochs=5, seed=0)
    for name, values in (("trained head", core.scores.model), *core.scores.baselines):
        assert f"| {name} | {values[0]:.1%} |" in summary
    html = client.predict(head_id, "The <b>film</b> was anything but dull.", api_name="/classify")
    assert "<b>film" not in html and re.search(r"<b>(positive|negative)</b>", html)
    _, summary, head_id = client.predict(MLM_KEY, "entities", "mean", -1, True, 2, 40, 0,
                                         api_name="/train_classifier")
    assert "| entity F1 (exact spans) | PER | LOC | ELEMENT | all |" in summary
    assert "| lookup of the training names |" in summary
    html = client.predict(head_id, "Marie Curie lived in <i>Paris</i>.", api_name="/classify")
    assert html.count("<sub class='head-label'>") == 7 and "<i>" not in html  # "i" twice: words too
