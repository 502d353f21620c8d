"""The Class tab's pictures and files on a round played through the core, from plain text."""

from __future__ import annotations

import io
import math

import pandas as pd

from components.class_rounds import plots
from components.class_rounds.round_page import blank_markdown
from models import open_round, reveal_round, submit_guess

TEXT = "The capital of France is [MASK]."


def played(mlm_key):
    ticket = open_round(TEXT, mlm_key)
    for student, guess in [("plots-s-01", "paris"), ("plots-s-02", "Paris"), ("plots-s-03", "a&b")]:
        submit_guess(ticket.code, guess, student)
    return reveal_round(ticket.code, ticket.teacher_token)


def test_the_chart_the_status_and_the_csv_say_what_the_round_holds(mlm_key):
    results = played(mlm_key)
    hidden = plots.round_figure(results, reveal=False)
    assert len(hidden.data) == 1  # before the reveal: the class alone
    shown = plots.round_figure(results, reveal=True)
    assert list(shown.data[0].y) == ["paris", "a&amp;b"]  # escaped for Plotly's labels
    assert list(shown.data[0].x) == [2 / 3, 1 / 3]
    assert [round(x, 6) for x in shown.data[1].x] == [round(p.score, 6) for p in results.model_top]
    status = plots.status_markdown(results, reveal=True)
    assert "**3** students have answered" in status and f"{results.mean_nll:.2f}" in status

    frame = pd.read_csv(io.StringIO(plots.round_frame(results).to_csv(index=False)))
    mine = frame[frame.source == "class"].set_index("word")
    assert mine.loc["paris", "students"] == 2
    paris = next(g for g in results.guesses if g.guess == "paris")
    assert math.isclose(mine.loc["paris", "minus_log_p"], -math.log(paris.probability), rel_tol=1e-9)
    assert (frame.source == "model").sum() == len(results.model_top)


def test_the_students_sentence_is_text_with_a_blank():
    shown = blank_markdown("<b>The</b> *bank* is [MASK] or <mask>.")
    assert "<b>" not in shown and "&lt;b&gt;" in shown and "\\*bank\\*" in shown
    assert shown.count("\\_\\_\\_\\_\\_") == 2
