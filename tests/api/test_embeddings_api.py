"""The Embeddings tab's endpoints through gradio_client, against the running app."""

from __future__ import annotations

import io
import urllib.request

import numpy as np
import pandas as pd
import pytest
from gradio_client.exceptions import AppError

from helpers import ENCODER_KEY

GROUPS = "# pets\nThe cat sleeps on the sofa.\nA cat is napping on the couch.\n\n# travel\nThe train to Rome is late.\nOur train to Rome is delayed."


def test_embeddings_endpoints_are_named(client):
    names = set(client.view_api(print_info=False, return_format="dict")["named_endpoints"])
    assert {"/similarity", "/word_in_context"} <= names


def _download(client, file) -> str:
    url = file["url"] if isinstance(file, dict) else file
    with urllib.request.urlopen(url, timeout=30) as resp:
        return resp.read().decode("utf-8")


def test_similarity_endpoint_matches_the_core(client):
    from models import compare_poolings

    plot, summary, table, csv = client.predict(GROUPS, ENCODER_KEY, -1, api_name="/similarity")
    assert plot is not None
    assert "separates the groups better" in summary and "ROC AUC" in summary
    assert table["headers"][:5] == ["pooling", "within groups", "across groups", "gap", "ROC AUC"]
    assert [row[0] for row in table["data"]] == ["[CLS] pooling", "mean pooling", "max pooling"]
    frame = pd.read_csv(io.StringIO(_download(client, csv)))
    sentences = [line for line in GROUPS.splitlines() if line and not line.startswith("#")]
    core = compare_poolings(ENCODER_KEY, sentences, -1, ("cls", "mean", "max"))
    for result in core:
        rows = frame[frame["pooling"] == result.pooling]
        assert rows["sentence"].tolist() == sentences
        got = rows[[str(j + 1) for j in range(4)]].to_numpy()
        np.testing.assert_allclose(got, result.matrix, atol=1e-6)


def test_word_in_context_endpoint(client):
    from models import word_in_context

    sentences = ["We sat on the bank of the river.", "I paid the cheque in at the bank."]
    text = "# rivers\n" + sentences[0] + "\n\n# money\n" + sentences[1]  # "# topic" lines are skipped
    line, scatter, summary = client.predict(text, "Bank", ENCODER_KEY, 0, api_name="/word_in_context")
    assert line is not None and scatter is not None
    mean = word_in_context(ENCODER_KEY, sentences, "bank").mean_cosine()
    assert f"{mean[0]:.3f} at layer 0" in summary and f"{mean[-1]:.3f} at layer 6" in summary


def test_the_verdict_keeps_cls_in_capitals(client):
    """The default sentence groups on minilm-mlm, whose [CLS] pooling separates them best."""
    from components.embeddings import copy
    from models import groups_text

    _, summary, _, _ = client.predict(groups_text(copy.SIMILARITY_DEFAULT_SET), "minilm-mlm", -1,
                                      api_name="/similarity")
    assert summary.startswith("**[CLS] pooling separates the groups better here**")


def test_no_groups_gives_an_empty_table_with_its_column_names(client):
    _, summary, table, _ = client.predict("A.\nB.", ENCODER_KEY, -1, api_name="/similarity")
    assert "No separation score" in summary
    assert table["headers"] == ["pooling", "within groups", "across groups", "gap", "ROC AUC"]
    assert not any(table["data"]) or table["data"] == [[]]


@pytest.mark.parametrize(
    ("api", "args", "words"),
    [
        ("/similarity", ("Only one sentence.", ENCODER_KEY, -1), "give two sentences"),
        ("/similarity", ("\n".join(f"S {i}." for i in range(51)), ENCODER_KEY, -1), "limit is 50"),
        ("/similarity", (GROUPS, ENCODER_KEY, 9), "from -7 to 6"),
        ("/word_in_context", ("The bank.\nThe shore.", "bank", ENCODER_KEY, -1), "not in sentence 2"),
        ("/word_in_context", ("The bank.\nA bank.", "", ENCODER_KEY, -1), "word is empty: type the word to trace"),
        # The layer is checked first, before the sentences and the forward pass.
        ("/word_in_context", ("The bank.\nThe shore.", "bank", ENCODER_KEY, 9), "from -7 to 6"),
    ],
)
def test_bad_input_is_a_readable_error_and_the_app_keeps_serving(client, api, args, words):
    with pytest.raises(AppError) as info:
        client.predict(*args, api_name=api)
    assert words in str(info.value)
    _, summary, _, _ = client.predict(GROUPS, ENCODER_KEY, 0, api_name="/similarity")
    assert "layer 0" in summary
