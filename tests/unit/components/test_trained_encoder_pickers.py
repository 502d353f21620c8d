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


def test_an_encoder_dropped_for_memory_is_dropped_from_the_pickers_and_explained():
    """The server keeps trained encoders within its memory budget; when the budget drops
    this session's encoder (``models/runtime/memory.py``), arriving at the tab sets a picker still holding it back to its
    default (left, Gradio refuses it: "Value: ... is not in the list of choices"), and a search
    with its key says it was dropped and how to get it back (not "Unknown model", a typo)."""
    import gradio as gr

    from components.finetune.tab import run_report, run_search
    from models import UnknownModelError, search
    from models.embeddings.sentence_encoder import _ENCODERS
    from models.registry.catalogue import get_spec

    *_, picker = run_sentence_encoder("mini-bert", "triplet", 0.5, 1, 0)
    mine, held = picker["value"], picker["choices"]  # the session's search picker after training
    others = [run_sentence_encoder("mini-bert", "triplet", 0.5, 1, 1)[-1]["value"]]
    _ENCODERS.drop(mine)  # what the memory budget does to the least recently used
    assert mine not in sentence_encoders() and others[-1] in sentence_encoders()

    update, known = refresh_search_models(held, mine)
    keys = [k for _, k in update["choices"]]
    assert mine not in keys and others[-1] in keys and known == update["choices"]
    default = update["value"]
    spec = next(m for m in list_models() if m.key == default)  # a registry model usable here
    assert default in keys and spec.available and spec.embedded
    kept, _ = refresh_search_models(held, others[-1])  # a value still offered stays as it is
    assert "value" not in kept and kept["choices"] == update["choices"]
    again, _ = refresh_search_models(known, mine)  # entries already current, the value not
    assert again["value"] == default
    model, word_model, _ = refresh_models(held, mine, "mini-bert")  # the Embeddings tab's two pickers
    assert model["value"] == model_picker()[1] and not model["value"].startswith("sbert:")
    assert "value" not in word_model and mine not in [k for _, k in model["choices"]]

    said = f"The sentence encoder {mine!r} was dropped to keep the server within its memory budget"
    how = "train it again: the “Train a sentence encoder” button, or train_sentence_encoder in the API."
    for press in (lambda: run_search("a cat on a mat", mine, "mean", "exact", 10),  # Search
                  lambda: run_report(mine, "mean", 10)):  # Compare ANN with exact search
        with pytest.raises(gr.Error) as caught:
            press()
        message = caught.value.message.replace("&#x27;", "'")
        assert said in message and how in message and "Unknown model" not in message
    with pytest.raises(UnknownModelError) as caught:  # the API's and a notebook's answer
        search(mine, "a cat on a mat")
    assert said in str(caught.value) and how in str(caught.value)
    with pytest.raises(UnknownModelError, match="No sentence encoder 'sbert:mini-bert-0-0000' in this process"):
        get_spec("sbert:mini-bert-0-0000")  # e.g. from before the server restarted
    with pytest.raises(UnknownModelError) as caught:  # a typo's list names the encoders that do exist
        get_spec("mini-brt")
    assert others[-1] in str(caught.value)
