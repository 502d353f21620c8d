"""The Class tab: a teacher opens a guess-first round and watches the class's answers arrive.

The round's page for students is ``round_page.py`` (the link ``?round=CODE``). The teacher's
code and token stay in the browser's storage (``gr.BrowserState``), so a reload of this page,
or an answer from another replica, finds the round again. A timer refreshes the view every
second while the round takes guesses; a refresh that finds nothing new sends nothing.
"""

from __future__ import annotations

from dataclasses import asdict

import gradio as gr

from models import (
    EncoderLabError,
    close_round,
    hide_guess,
    list_models,
    open_round,
    reveal_round,
    round_results,
    submit_guess,
)

from ..shell.browser_storage import browser_state
from ..shell.common import escape, model_choices, readable_errors
from ..shell.deep_links import LinkTarget
from ..shell.files import TEMP, kept_file
from . import copy, plots

ROUNDS = {"concurrency_id": "class-rounds", "concurrency_limit": 8}  # quick reads and writes of the store
CSV_FOLDER = TEMP / "encoder-lab-rounds"
CSV_KEEP = 256  # the newest files (one per state of a round), every round together: the folder stays bounded


def round_link(request: gr.Request | None, code: str) -> str:
    """The student's link, at the address this page was reached by (nginx passes it on)."""
    headers = dict(getattr(request, "headers", None) or {})
    host = headers.get("x-forwarded-host") or headers.get("host") or "127.0.0.1:7860"
    scheme = headers.get("x-forwarded-proto") or "http"
    return f"{scheme}://{host}/?round={code}"


def teacher_view(results, request: gr.Request | None) -> tuple:
    """(board, link, status, chart, hide picker, CSV, timer, shown): the round as the teacher sees it."""
    reveal = results.revealed
    return (plots.board_html(results.code), round_link(request, results.code),
            plots.status_markdown(results, reveal), plots.round_figure(results, reveal),
            gr.Dropdown(choices=list(results.counts), value=None), round_csv(results),
            gr.Timer(active=results.accepting), _signature(results))


def round_csv(results) -> str:
    """The round as a CSV file (``plots.round_frame``), the path the export button downloads."""
    data = plots.round_frame(results).to_csv(index=False).encode("utf-8")
    return kept_file(data, CSV_FOLDER, "round", ".csv", CSV_KEEP)


def _signature(results) -> str:
    return repr((results.students, tuple(results.counts.items()), results.state, results.revealed))


def _nothing(status: str = "") -> tuple:
    return (gr.skip(), gr.skip(), status or gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.Timer(active=False),
            gr.skip())


def start_class_round(text: str, model_key: str, minutes, request: gr.Request):
    with readable_errors("Opening a round"):
        ticket = open_round(text, model_key, minutes)
        return ({"code": ticket.code, "token": ticket.teacher_token},
                *teacher_view(round_results(ticket.code), request))


def refresh_round(teacher, shown: str, request: gr.Request):
    """The timer's tick and the tab's arrival: the round again, or nothing when it is unchanged."""
    if not teacher:
        return _nothing(copy.NO_ROUND)
    try:
        results = round_results(teacher["code"])
    except EncoderLabError as exc:  # deleted (a day old) or never here: say so, stop the timer
        return _nothing(escape(str(exc)))
    if _signature(results) == shown:
        return _nothing()[:6] + (gr.Timer(active=results.accepting), gr.skip())
    return teacher_view(results, request)


def teacher_act(action, task: str):
    """A handler for a teacher's button: ``action(code, token)`` -> RoundResults."""
    def handler(teacher, request: gr.Request):
        with readable_errors(task):
            if not teacher:
                raise EncoderLabError(copy.NO_ROUND)
            return teacher_view(action(teacher["code"], teacher["token"]), request)
    return handler


def hide_chosen(teacher, guess, request: gr.Request):
    return teacher_act(lambda code, token: hide_guess(code, token, guess), "Hiding a guess")(teacher, request)


def build_class_tab() -> LinkTarget:
    models = list_models()
    default = next((m.key for m in models if m.default), None)
    with gr.Tab("Class", id="class") as tab:
        gr.Markdown(copy.TEACHER_HELP)
        with gr.Row():
            text = gr.Textbox(copy.EXAMPLE, label=copy.SENTENCE_LABEL, scale=4, max_lines=3)
            model = gr.Dropdown(model_choices(models, need_mlm=True), value=default, label="Model", scale=2)
            minutes = gr.Number(30, label=copy.MINUTES_LABEL, precision=0, minimum=1, maximum=1440, scale=1)
        start = gr.Button(copy.OPEN, variant="primary")
        board = gr.HTML("", elem_id="class-board")
        link = gr.Textbox(label=copy.LINK_LABEL, interactive=False, elem_id="class-link")
        status = gr.Markdown(copy.NO_ROUND, elem_id="class-status")
        chart = gr.Plot(label=copy.CHART_LABEL, elem_id="class-chart")
        with gr.Row():
            hide_pick = gr.Dropdown([], label=copy.HIDE_LABEL, scale=3)
            hide = gr.Button(copy.HIDE, scale=1)
        with gr.Row():
            reveal = gr.Button(copy.REVEAL, variant="primary")
            close = gr.Button(copy.CLOSE)
            export = gr.DownloadButton(copy.EXPORT, value=None)
        timer = gr.Timer(1.0, active=False)
        teacher = browser_state(None, "encoder-lab-class-teacher")
        shown = gr.State("")  # what the screen shows (a signature): a tick that finds it again sends nothing
        anew = gr.State("")  # the tab's arrival draws the round whatever the screen held
    view = [board, link, status, chart, hide_pick, export, timer, shown]
    start.click(start_class_round, [text, model, minutes], [teacher, *view], api_name="class_open",
                api_visibility="private", **ROUNDS)
    timer.tick(refresh_round, [teacher, shown], view, api_name="class_refresh", api_visibility="private", **ROUNDS)
    tab.select(refresh_round, [teacher, anew], view, api_name="class_arrive", api_visibility="private", **ROUNDS)
    reveal.click(teacher_act(reveal_round, "Revealing the answer"), teacher, view, api_visibility="private", **ROUNDS)
    close.click(teacher_act(close_round, "Closing the round"), teacher, view, api_visibility="private", **ROUNDS)
    hide.click(hide_chosen, [teacher, hide_pick], view, api_visibility="private", **ROUNDS)
    return LinkTarget("class", tab)


def build_round_api() -> None:
    """The rounds as API endpoints (gradio_client, curl): plain JSON in and out."""
    def api_open_round(text: str, model_key: str | None = None, minutes: int = 60) -> dict:
        with readable_errors("Opening a round"):
            return asdict(open_round(text, model_key, minutes))

    def api_submit_guess(code: str, guess: str, student: str) -> dict:
        with readable_errors("Sending a guess"):
            return asdict(submit_guess(code, guess, student))

    def api_round_results(code: str) -> dict:
        with readable_errors("Reading the round"):
            return asdict(round_results(code))

    def api_close_round(code: str, teacher_token: str) -> dict:
        with readable_errors("Closing the round"):
            return asdict(close_round(code, teacher_token))

    for fn, name in [(api_open_round, "open_round"), (api_submit_guess, "submit_guess"),
                     (api_round_results, "round_results"), (api_close_round, "close_round")]:
        gr.api(fn, api_name=name, **ROUNDS)
