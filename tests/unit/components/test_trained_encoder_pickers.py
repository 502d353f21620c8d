"""The sentence encoders trained in this process are offered by the Embeddings tab's pickers
and by search's, refreshed when a tab is selected: a Gradio dropdown's choices are fixed
when the page is built, so a copy trained later is added by these handlers."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from components.embeddings.tab import model_picker, refresh_models, run_similarity
from components.finetune.sentence import refresh_search_models, run_sentence_encoder
from components.shell.common import model_choices
from models import list_models, sentence_encoders, similarity

SENTENCES = "A cat sleeps on the sofa.\nA kitten naps on the couch.\n\nShares fell sharply.\nThe market dropped today."


@pytest.fixture(scope="module")
def trained():
    """A sentence encoder trained through the Fine-tuning tab's handler (two steps: seconds)."""
    *_, picker = run_sentence_encoder("mini-bert", "triplet", 0.5, 2, 0)
    return picker


def test_the_training_handler_offers_its_copy_to_search(trained):
    key = trained["value"]
    assert key.startswith("sbert:mini-bert-") and key in sentence_encoders()
    assert (f"{key} (trained here)", key) in trained["choices"]


def test_the_embeddings_pickers_list_it_after_the_registry(trained):
    key = trained["value"]
    choices, default = model_picker()
    keys = [k for _, k in choices]
    assert keys[-len(sentence_encoders()):] == list(sentence_encoders()) and key in keys
    assert choices[:len(list_models())] == model_choices(list_models())  # the registry's, as before
    assert default is not None and not default.startswith("sbert:")
    *updates, known = refresh_models()
    assert len(updates) == 2 and all(u["choices"] == choices for u in updates)  # both pickers of the tab
    assert known == choices
    search, known = refresh_search_models()
    assert search["choices"] == known == choices


def test_a_picker_that_holds_the_entries_already_gets_nothing_on_arrival(trained):
    """The tab's select event sends the pickers' entries only when they changed (a trained
    encoder since): an unchanged update still redraws the pickers in the browser."""
    import gradio as gr

    choices, _ = model_picker()
    assert all(u == gr.skip() for u in refresh_models(list(choices)))  # same entries: nothing sent
    older = choices[:-1]  # before the last encoder was trained
    *updates, known = refresh_models(older)
    assert all(u["choices"] == choices for u in updates) and known == choices
    assert all(u == gr.skip() for u in refresh_search_models(list(choices)))


def test_the_embeddings_tab_embeds_with_the_trained_copy(trained):
    key = trained["value"]
    heatmaps, summary, table, _ = run_similarity(SENTENCES, key, -1)
    assert f"`{key}`" in summary and len(table) == 3  # [CLS], mean and max
    mean = next(t for t in json.loads(heatmaps.to_json())["data"] if t.get("xaxis") == "x2")
    sentences = [s for s in SENTENCES.splitlines() if s]
    expected = similarity(key, sentences, pooling="mean").matrix
    z = mean["z"]
    if isinstance(z, dict):  # Plotly's typed-array encoding
        z = np.frombuffer(base64.b64decode(z["bdata"]), dtype=np.dtype(z["dtype"])).reshape(expected.shape)
    np.testing.assert_allclose(np.asarray(z, dtype=float), expected, atol=1e-4)
    assert not np.allclose(expected, similarity("mini-bert", sentences, pooling="mean").matrix, atol=1e-4)
