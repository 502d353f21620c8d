"""The Lessons tab and the link writer through gradio_client, on the running app:
every step answers computed, and its numbers are the core's own."""

from __future__ import annotations

import base64
import json
import random
from urllib.parse import parse_qsl

import numpy as np
import pytest
from gradio_client.exceptions import AppError

from components.lessons import copy
from components.shell.links import DEFAULT_TAB, TABS, parse_link
from components.shell.common import show_token
from helpers import plotly_array
from models import (
    ablate_heads,
    logit_lens,
    extract_attention,
    first_capable,
    heldout_sentences,
    list_models,
    masked_lm_loss,
    pair_loss,
    past_budget_of,
    sentence_order,
    simulate_masking,
    static_vs_contextual,
)

# outputs of each step's view (components.lessons.tab.VIEWS); the endpoint returns the step's
# text first, then every step's outputs in the steps' order (the steps not shown: unchanged).
# Its inputs: the step, then every step's inputs in the same order, each named
# "<step>_<its label>": the MLM-loss step's text and seed are mlm_loss_text and mlm_loss_seed,
# the pair step's sentences nsp_sentence_a and nsp_sentence_b.
OUTPUTS = {
    "encoder-vs-decoder": 5, "before-bert": 5, "tokens-embeddings": 3, "attention": 2, "knock-out-a-head": 2,
    "answer-across-layers": 3, "masking": 2, "mlm-loss": 3, "nsp": 2,
    "variants": 4, "pooling-retrieval": 4, "fine-tuning": 3, "sentence-encoder": 3, "sentence-pairs": 3,
    "span-head": 3, "distillation": 2, "retrieve-then-read": 3,
}
SLUGS = [s.slug for s in copy.STEPS]


def step_outputs(answer, slug):
    start = 1 + sum(OUTPUTS[s] for s in SLUGS[:SLUGS.index(slug)])
    return answer[start:start + OUTPUTS[slug]]


def unchanged(value) -> bool:
    return isinstance(value, dict) and value.get("__type__") == "update"


def heatmap_z(plot) -> np.ndarray:
    z = json.loads(plot["plot"])["data"][0]["z"]
    if isinstance(z, dict):  # Plotly's typed-array encoding
        data = np.frombuffer(base64.b64decode(z["bdata"]), dtype=np.dtype(z["dtype"]))
        return data.reshape([int(n) for n in str(z["shape"]).split(",")])
    return np.asarray(z, dtype=float)


def test_lesson_endpoints_are_listed(client):
    names = set(client.view_api(print_info=False, return_format="dict")["named_endpoints"])
    assert {"/lesson_step", "/view_link"} <= names


def test_every_step_answers_with_its_own_view_computed(client):
    assert set(SLUGS) == set(OUTPUTS) and len(SLUGS) == 17
    for number, slug in enumerate(SLUGS, 1):
        answer = client.predict(slug=slug, api_name="/lesson_step")
        assert len(answer) == 1 + sum(OUTPUTS.values())
        assert answer[0].startswith(f"### Step {number} of {len(SLUGS)}: {copy.STEPS[number - 1].title}")
        assert "**Try this:**" in answer[0]
        mine = step_outputs(answer, slug)
        assert not any(unchanged(v) for v in mine), slug
        others = [v for s in SLUGS if s != slug for v in step_outputs(answer, s)]
        assert all(unchanged(v) for v in others), slug


def test_attention_step_shows_the_cores_weights(client):
    plot, note = step_outputs(client.predict(slug="attention", api_name="/lesson_step"), "attention")
    key = first_capable(None, "attention")
    weights = extract_attention(key, copy.ATTENTION_TEXT).weights[2, 0]  # the step opens on layer 2, head 0
    z = heatmap_z(plot)
    assert z.shape == weights.shape
    np.testing.assert_allclose(z, weights, atol=1e-5)
    np.testing.assert_allclose(z.sum(axis=1), 1.0, atol=1e-4)
    assert f"{len(weights)} tokens" in note and "layer 2, head 0" in note


def test_knock_out_and_layers_steps_show_the_cores_answers(client):
    key = first_capable(None, "mlm")
    plot, note = step_outputs(client.predict(slug="knock-out-a-head", api_name="/lesson_step"), "knock-out-a-head")
    layers = logit_lens(key, copy.LAYERS_TEXT).num_layers
    core = ablate_heads(key, copy.KNOCK_OUT_TEXT, [(layers - 1, 0)])  # the step opens on the last layer, head 0
    after = json.loads(plot["plot"])["data"][1]
    np.testing.assert_allclose(plotly_array(after["y"]), [g.probability for g in core.masks[0].after], atol=1e-5)
    assert f"without layer {layers - 1}, head 0" in note
    plot, table, note = step_outputs(client.predict(slug="answer-across-layers", api_name="/lesson_step"),
                                     "answer-across-layers")
    lens = logit_lens(key, copy.LAYERS_TEXT)
    assert [row[1] for row in table["data"]][-1] == show_token(lens.layers[-1].top[0].token)
    assert len(table["data"]) == layers + 1 and "is the top guess" in note


def test_before_bert_step_shows_the_cores_static_and_contextual_figures(client):
    answer = client.predict(slug="before-bert", before_bert_word="plant", before_bert_your_own_sentences="",
                            api_name="/lesson_step")
    layers, scatter, neighbours, sentences, note = step_outputs(answer, "before-bert")
    result = static_vs_contextual("plant", model_key=first_capable(None, "mlm"))
    static, within, across = json.loads(layers["plot"])["data"]
    assert plotly_array(static["y"]).tolist() == [1.0] * len(result.layers)
    np.testing.assert_allclose(plotly_array(within["y"]), result.within, atol=1e-5)
    np.testing.assert_allclose(plotly_array(across["y"]), result.across, atol=1e-5)
    assert len(json.loads(scatter["plot"])["data"]) == len(result.senses) == 2
    assert [row[1] for row in neighbours["data"]] == [w for w, _ in result.table_neighbours]
    assert [row[3] for row in neighbours["data"]] == [w for w, _ in result.word2vec_neighbours]
    assert [row[2] for row in sentences["data"]] == list(result.sentences)
    assert f"**{result.within[-1]:.3f}**" in note and f"**{result.across[-1]:.3f}**" in note
    with pytest.raises(AppError, match="'zzzqx' is not one of the"):
        client.predict(slug="before-bert", before_bert_word="zzzqx", api_name="/lesson_step")


def test_mlm_loss_step_scores_the_selected_positions(client):
    table, arithmetic, note = step_outputs(
        client.predict(slug="mlm-loss", mlm_loss_text=copy.MASKING_TEXT, mlm_loss_seed=3, api_name="/lesson_step"), "mlm-loss")
    key = first_capable(None, "mlm")
    sim = simulate_masking(key, copy.MASKING_TEXT, 0.15, 0.8, 0.1, 0.1, False, 1, True, 3)
    loss = masked_lm_loss(key, sim)
    assert len(table["data"]) == len(loss.positions) == len(sim.epochs[0].selected) > 0
    assert f"Loss = {loss.loss:.4f} nats" in note
    nll = table["headers"].index("-log p (nats)")
    assert np.mean([row[nll] for row in table["data"]]) == pytest.approx(loss.loss, abs=1e-3)
    assert len(arithmetic["data"]) > 0


def test_pair_step_uses_the_pair_head_of_an_available_model(client):
    a, b = "The kettle boiled.", "She poured the tea."
    frame, note = step_outputs(client.predict(slug="nsp", nsp_sentence_a=a, nsp_sentence_b=b, api_name="/lesson_step"), "nsp")
    models = list_models()
    nsp = [m.key for m in models if m.available and m.has_nsp_head]
    sop = [m.key for m in models if m.available and m.has_sop_head]
    assert nsp or sop, "the test zoo has mini-bert (NSP) and mini-albert (SOP)"
    key = (nsp or sop)[0]
    column = frame["headers"][-1]
    stage = past_budget_of(key, "nsp") if nsp else ""  # its head trained past the budget, read beside it
    if nsp:
        pairs = [(a, b), (a, random.Random(0).choice(heldout_sentences()))]
        expected = [pair_loss(m, x, y, head="nsp").p_is_next for m in [key, stage][: 1 + bool(stage)] for x, y in pairs]
        assert column == "P(IsNext)"
    else:
        expected = [sentence_order(key, a, b), sentence_order(key, b, a)]
    assert [row[-1] for row in frame["data"]] == pytest.approx(expected, abs=1e-4)
    assert f"`{key}`" in note and (not stage or f"`{stage}`" in note)


def test_view_link_writes_each_tabs_inputs(client):
    for tab in TABS:
        query = client.predict(tab=tab.slug, api_name="/view_link")
        params = dict(parse_qsl(query[1:], keep_blank_values=True))
        assert params["tab"] == tab.slug
        view = parse_link(params, list_models())
        assert view.tab == tab.slug and view.notes == (), (tab.slug, view.notes)
    attention = dict(parse_qsl(client.predict(tab="attention", api_name="/view_link")[1:]))
    assert attention["text"] == "I sat by the river bank." and attention["layer"] == "0"
    assert client.predict(tab="lessons", api_name="/view_link") == f"?tab=lessons&lesson={SLUGS[0]}"


def test_view_link_of_an_unknown_tab_is_the_default_tabs(client):
    query = client.predict(tab="<script>alert(1)</script>", api_name="/view_link")
    assert query == f"?tab={DEFAULT_TAB}"  # the default tab, none of the values sent with it


def test_many_input_endpoints_name_their_parameters(client):
    """lesson_step and view_link list named parameters (not param_1, param_2, ...), and a
    link written from keyword arguments carries them."""
    api = client.view_api(return_format="dict", print_info=False)["named_endpoints"]
    for endpoint in ("/lesson_step", "/view_link"):
        names = [p["parameter_name"] for p in api[endpoint]["parameters"]]
        assert not any(n.startswith("param_") for n in names) and len(set(names)) == len(names)
    query = client.predict(tab="attention", attention_text="The bank was closed.", attention_layer=3,
                           api_name="/view_link")
    values = dict(parse_qsl(query[1:]))
    assert values["tab"] == "attention" and values["text"] == "The bank was closed." and values["layer"] == "3"
