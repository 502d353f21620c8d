"""The Lessons' "Before BERT" view from plain text, as the tab calls it: its charts, tables and
note carry the core's figures, and text a user types reaches them escaped."""

from __future__ import annotations

import json

import numpy as np
import pytest

from components.lessons import before_bert_plots, views
from helpers import plotly_array
from models import InputError, project_2d, static_vs_contextual

KEY = "minilm-mlm"


def _traces(figure) -> list[dict]:
    return json.loads(figure.to_json())["data"]


def test_the_view_shows_the_cores_figures_for_a_builtin_word():
    layers, scatter, neighbours, sentences, note = views.before_bert(KEY, "cell", "")
    result = static_vs_contextual("cell", None, KEY)
    static, within, across = _traces(layers)
    assert plotly_array(static["y"]).tolist() == [1.0] * len(result.layers)
    np.testing.assert_allclose(plotly_array(within["y"]), result.within, atol=1e-6)
    np.testing.assert_allclose(plotly_array(across["y"]), result.across, atol=1e-6)
    points = project_2d(result.last_layer)
    for k, trace in enumerate(_traces(scatter)):  # one trace per sense, its points where PCA put them
        rows = [i for i, s in enumerate(result.sense_of) if s == k]
        assert trace["name"] == result.senses[k].label
        np.testing.assert_allclose(plotly_array(trace["x"]), points[rows, 0], atol=1e-5)
    assert neighbours.iloc[:, 1].tolist() == [w for w, _ in result.table_neighbours]
    assert sentences["sentence"].tolist() == list(result.sentences)
    n = len(result.sentences)
    assert f"**{round(result.same_sense_nearest[-1] * n)} of {n}**" in note and "cell.n.02991302" in note


def test_your_own_senses_reach_the_view_escaped():
    text = ("# <b>water</b>\nThey drank from the spring.\nThe spring water was cold.\n\n"
            "# season\nFlowers open in spring.\nSpring came early this year.")
    layers, scatter, _, sentences, note = views.before_bert(KEY, "spring", text)
    assert "<b>" not in note and "&lt;b&gt;water&lt;/b&gt;" in note
    assert _traces(scatter)[0]["name"] == "&lt;b&gt;water&lt;/b&gt;"
    assert sentences["sense"].tolist()[:2] == ["<b>water</b>"] * 2  # a table cell is text, not HTML
    assert "“spring”" in json.loads(layers.to_json())["layout"]["title"]["text"]


def test_the_note_leaves_out_cues_that_are_not_words_of_the_vectors():
    result = static_vs_contextual("bank", None, KEY)
    cues = before_bert_plots._cues(result)
    assert all(f"{cue}" in cues for sense in result.senses for cue in sense.cues)
    assert before_bert_plots._cues(static_vs_contextual("spring", "A spring.\nThe spring.\n\nSpring.\nIn spring.", KEY)) == ""
    with pytest.raises(InputError, match="'zzzqx' is not one of the"):
        views.before_bert(KEY, "zzzqx", "")
