"""A class round's page for students: the link ``?round=CODE`` opens it, on a phone first.

The page is the app's page with everything but this column hidden (``assets/present.js``
marks a round's link, ``assets/style.css`` hides the rest): the sentence, one box, Send.
Each student's id is random, made on the first visit and kept in the browser's storage per
round (``gr.BrowserState``), so a reload or a restarted replica never counts a student twice.
After Send the page polls the round every two seconds until the teacher reveals the model's
answer, then shows the class's bars beside the model's.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

import gradio as gr

from models import MASK_PATTERN, EncoderLabError, round_results, submit_guess

from ..shell.browser_storage import browser_state
from ..shell.common import escape, quoted, readable_errors
from . import copy, plots
from .tab import ROUNDS, build_round_api

KEEP_ROUNDS = 8  # student ids kept in a browser: one per round, the newest


@dataclass
class RoundPage:
    code: object  # hidden textbox: the round's code, from the link
    sentence: object
    guess: object
    send: object
    answer: object
    chart: object
    student: object  # BrowserState: {code: student id}
    timer: object


def build_round_page() -> RoundPage:
    """The column (outside the tabs); its events are wired by ``wire_round_page``."""
    with gr.Column(elem_id="round-page"):
        gr.Markdown(f"## {copy.STUDENT_TITLE}")
        sentence = gr.Markdown("", elem_id="round-sentence")
        guess = gr.Textbox(label=copy.GUESS_LABEL, max_lines=1, elem_id="round-guess", autofocus=False)
        send = gr.Button(copy.SEND, variant="primary", elem_id="round-send")
        answer = gr.Markdown(copy.NOT_YET, elem_id="round-answer")
        chart = gr.Plot(label=copy.STUDENT_CHART_LABEL, visible=False, elem_id="round-chart")
        code = gr.Textbox("", visible=False, label="Round code")
        student = browser_state({}, "encoder-lab-class-student")
        timer = gr.Timer(2.0, active=False)
    return RoundPage(code, sentence, guess, send, answer, chart, student, timer)


def open_round_page(students, request: gr.Request):
    """The page's load: on a round's link, the sentence and this browser's id for the round."""
    code = (dict(request.query_params).get("round") if request is not None else None) or ""
    if not code:
        return gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()
    try:
        results = round_results(code)
    except EncoderLabError as exc:
        return "", gr.skip(), escape(str(exc)), gr.skip(), gr.Timer(active=False)
    students = dict(students or {})
    if results.code not in students:
        students = dict(list(students.items())[-(KEEP_ROUNDS - 1):])
        students[results.code] = secrets.token_urlsafe(12)
    return results.code, blank_markdown(results.text), state_message(results), students, gr.Timer(active=True)


def blank_markdown(text: str) -> str:
    """The round's sentence, escaped, its [MASK] shown as a blank."""
    def text_of(part: str) -> str:
        return escape(part).replace("\\", "\\\\").replace("*", "\\*").replace("_", "\\_").replace("`", "\\`")

    return "\\_\\_\\_\\_\\_".join(text_of(part) for part in MASK_PATTERN.split(text))


def state_message(results) -> str:
    if results.revealed:
        return copy.REVEALED
    return copy.NOT_YET if results.accepting else copy.CLOSED


def send_round_guess(code: str, guess: str, students):
    with readable_errors("Sending your guess"):
        student = (students or {}).get(code)
        if not code or not student:
            raise EncoderLabError("This page has no round: open the link your teacher shows, or reload it.")
        receipt = submit_guess(code, guess, student)
        words = copy.CHANGED if receipt.replaced else copy.WAITING
        return words.format(guess=quoted(receipt.guess)), gr.Timer(active=True)


def poll_round(code: str):
    """The timer's tick: once the teacher reveals, both distributions (and the timer stops)."""
    if not code:
        return gr.skip(), gr.skip(), gr.Timer(active=False)
    try:
        results = round_results(code)
    except EncoderLabError as exc:
        return escape(str(exc)), gr.skip(), gr.Timer(active=False)
    if results.revealed:
        return (copy.REVEALED + "\n\n" + plots.loss_markdown(results),
                gr.Plot(plots.round_figure(results, True), visible=True), gr.Timer(active=False))
    if not results.accepting:
        return copy.CLOSED, gr.skip(), gr.Timer(active=True)
    return gr.skip(), gr.skip(), gr.Timer(active=True)


def wire_round_page(demo: gr.Blocks, page: RoundPage) -> None:
    """The page's events, and the rounds' API endpoints (outside the tabs, as the page is)."""
    build_round_api()
    demo.load(open_round_page, page.student, [page.code, page.sentence, page.answer, page.student, page.timer],
              api_name="round_page_open", api_visibility="private", **ROUNDS)
    gr.on([page.send.click, page.guess.submit], send_round_guess, [page.code, page.guess, page.student],
          [page.answer, page.timer], api_name="round_page_send", api_visibility="private", **ROUNDS)
    page.timer.tick(poll_round, page.code, [page.answer, page.chart, page.timer], api_name="round_page_poll",
                    api_visibility="private", **ROUNDS)
