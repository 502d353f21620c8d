"""Issue 26's endpoints (sentence encoder, pair and span heads, distillation) through
gradio_client, against the running app, as the UI calls them."""

from __future__ import annotations

import json

import pytest
from gradio_client.exceptions import AppError

from models import sentence_encoders


def test_endpoints_are_named(client):
    names = set(client.view_api(print_info=False, return_format="dict")["named_endpoints"])
    assert {"/train_sentence_encoder", "/stop_live_training", "/train_pair_classifier", "/classify_pair",
            "/train_span_head", "/answer_span", "/distill"} <= names


def test_span_head_from_plain_text_escapes_the_user_text(client):
    summary, head_id = client.predict("mini-bert", 2, 0, api_name="/train_span_head")
    assert head_id.startswith("span:mini-bert/") and "258 parameters" in summary  # 2 x 128 + 2
    assert "BertForQuestionAnswering.qa_outputs" in summary
    context = "<b>Peru</b> lies in South America, and its capital is Lima."
    html, chart = client.predict(head_id, "What is the capital of Peru?", context, api_name="/answer_span")
    assert "<b>Peru</b>" not in html and "&lt;b&gt;" in html and chart is not None
    with pytest.raises(AppError, match="needs a context"):
        client.predict(head_id, "What is the capital of Peru?", "", api_name="/answer_span")


def test_sentence_encoder_offers_its_copy_to_search(client):
    loss_plot, matrix, summary, picker = client.predict("mini-bert", "triplet", 0.5, 2, 0,
                                                        api_name="/train_sentence_encoder")
    assert "Held-out separation ROC AUC" in summary and "sbert:mini-bert-" in summary
    assert picker["value"].startswith("sbert:mini-bert-")  # the search picker now offers and shows it
    assert picker["value"] not in sentence_encoders()  # trained in the server's process, not in this one
    assert picker["value"] in [key for _, key in picker["choices"]]


def test_bad_input_is_a_readable_error(client):
    with pytest.raises(AppError, match="margin"):
        client.predict("mini-bert", "triplet", 9, 2, 0, api_name="/train_sentence_encoder")
    with pytest.raises(AppError, match="Train a pair head first"):
        client.predict("", "a", "b", api_name="/classify_pair")


def test_pair_head_then_classify_a_pair_escapes_it(client):
    curves, summary, head_id = client.predict("mini-bert", "definition-match", True, 2, 0,
                                              api_name="/train_pair_classifier")
    assert head_id.startswith("pair:mini-bert/definition-match/") and "258 parameters" in summary
    assert "BertForSequenceClassification.classifier" in summary and curves is not None
    html = client.predict(head_id, "<i>volcano</i>", "a mountain formed by lava", api_name="/classify_pair")
    assert "<i>" not in html and "&lt;i&gt;volcano" in html and ("match" in html or "other" in html)


def test_distill_draws_both_students_on_one_chart(client):
    chart, summary = client.predict("mini-bert", "1x64", 2, 0.5, 2, 0, api_name="/distill")
    assert "MLM alone" in summary and "soft targets" in summary
    names = [trace["name"] for trace in json.loads(chart["plot"])["data"]]
    assert any(n.startswith("soft targets + MLM") for n in names) and any(n.startswith("MLM alone") for n in names)


def test_a_trained_copy_embeds_in_the_embeddings_tab_once_its_pickers_are_refreshed(client):
    *_, picker = client.predict("mini-bert", "triplet", 0.5, 2, 0, api_name="/train_sentence_encoder")
    key = picker["value"]
    text = "A cat sleeps on the sofa.\nA kitten naps on the couch.\n\nShares fell sharply.\nThe market dropped today."
    with pytest.raises(AppError, match="not in the list of choices"):  # the picker as built, before the copy
        client.predict(text, key, -1, api_name="/similarity")
    model, word_model = client.predict(api_name="/embeddings_models")  # what selecting the tab runs
    assert key in [k for _, k in model["choices"]] and model["choices"] == word_model["choices"]
    heatmaps, summary, table, _ = client.predict(text, key, -1, api_name="/similarity")
    assert f"`{key}`" in summary and "4 sentences" in summary and table["data"]
    assert key in [k for _, k in client.predict(api_name="/search_models")["choices"]]


def test_a_visitors_encoder_stays_while_other_visitors_train(client, app_server):
    """What a class trains is kept per visitor within the server's memory budget: another
    visitor training three encoders leaves this session's newest one searchable and in its
    picker (what is dropped when the budget runs out, and what it says: tests/unit/runtime)."""
    from gradio_client import Client

    *_, picker = client.predict("mini-bert", "triplet", 0.5, 1, 0, api_name="/train_sentence_encoder")
    mine = picker["value"]
    other = Client(app_server, verbose=False, download_files=False)  # another visitor
    for seed in (1, 2, 3):
        other.predict("mini-bert", "triplet", 0.5, 1, seed, api_name="/train_sentence_encoder")
    assert mine in [k for _, k in client.predict(api_name="/search_models")["choices"]]  # the tab's picker
    hits, note = client.predict("a cat on a mat", mine, "mean", "exact", 10, api_name="/search")
    assert hits["data"] and "hits among" in note


def test_only_the_visitor_who_started_a_live_run_stops_it(client, app_server):
    """Two visitors (two gradio_client sessions, as two pages): the second's Stop leaves the
    first's sentence encoder training, with a message saying why; the first's own Stop ends it
    after its current step (before, anyone's Stop stopped whoever's run held the slot)."""
    import time

    from gradio_client import Client

    other = Client(app_server, verbose=False, download_files=False)
    job = client.submit("mini-bert", "triplet", 0.5, 1000, 0, api_name="/train_sentence_encoder")
    deadline, answer = time.monotonic() + 150, ""
    while time.monotonic() < deadline and not job.done():  # the warm-up's lesson runs may hold the slot first
        answer = other.predict(api_name="/stop_live_training")
        if "sentence encoder" in answer:
            break
        time.sleep(0.2)
    assert answer.startswith("Not stopped: training a sentence encoder on mini-bert was started by another visitor"), answer
    assert not job.done()
    mine = client.predict(api_name="/stop_live_training")
    assert mine.startswith("Stop requested: training a sentence encoder on mini-bert"), mine
    summary = job.result(timeout=120)[2]
    assert "of 1000 steps (stopped" in summary, summary
