"""The Pre-training tab: watch the shipped model learn, and train a tiny BERT live."""

from __future__ import annotations

import functools
import threading

import gradio as gr
import pandas as pd

from models import SHIPPED_RUN, TINY_MAX_STEPS, load_history, train_tiny

from ..shell.common import error_figure, readable_errors, session_of, user_error
from ..shell.deep_links import LinkTarget
from ..shell.server import on_gpu
from . import copy
from . import plots

_training_lock = threading.Lock()  # one live training run per server: the CPU is shared
_stop_requested = threading.Event()  # set by Stop (browser or API); the running loop checks it
_run = {"owner": None}  # the session that started the run going on: only it can stop it


@functools.lru_cache(maxsize=1)
def _history():
    """The recorded run (read once: the shipped files do not change while the app runs)."""
    try:
        return load_history(SHIPPED_RUN)
    except FileNotFoundError:
        return None


def history_figure():
    history = _history()
    if history is None:
        return error_figure("No training run is recorded in weights/minilm-mlm/.")
    return plots.training_figure(
        history.steps, history.loss, history.eval_steps, history.eval_top1, history.eval_top5,
        title="The shipped model's training run", stage_starts=history.stage_starts,
    )


def snapshot_choices() -> list[tuple[str, int]]:
    history = _history()
    if history is None:
        return []
    staged = bool(history.stage_starts)
    return [
        (f"{s['fraction']:.0%} of training (step {s['step']:,}"
         + (f", stage {s.get('stage', 1)})" if staged else ")"), i)
        for i, s in enumerate(history.snapshots)
    ]


def snapshot_table(index: int | None) -> pd.DataFrame:
    """Probe predictions at one snapshot of the recorded run (the ``training_snapshot`` API)."""
    history = _history()
    if history is None or index is None or not 0 <= int(index) < len(history.snapshots):
        return plots.probes_frame([])
    return plots.probes_frame(history.snapshots[int(index)]["probes"])


def run_summary(history) -> str:
    """One line on the recorded run: steps, tokens, and its stages."""
    text = (f"Recorded run: {history.steps[-1]:,} steps of {history.total_steps:,} planned, "
            f"about {history.tokens_seen:,} training tokens seen.")
    if history.stage_starts:
        starts = ", ".join(f"stage {n} from step {s:,}" for n, s in enumerate(history.stage_starts, 2))
        text += (f" It ran in {len(history.stage_starts) + 1} stages ({starts}): each later stage "
                 "continued from the weights the one before it left, with a fresh warm-up of the "
                 "learning rate (the step in the loss curve); the model card says what each trained.")
    return text


@on_gpu
def train_now(steps: float, seed: float, request: gr.Request = None, progress=gr.Progress()):
    """Train a tiny BERT from scratch, streaming the loss curve (the ``train_tiny`` API)."""
    if not _training_lock.acquire(blocking=False):
        raise user_error(
            "A live training run is already going on this server (one at a time, so the app "
            "stays quick for everyone). Try again when it has finished."
        )
    _stop_requested.clear()
    _run["owner"] = session_of(request)
    try:
        steps_done, losses, probes, status = [], [], [], ""
        with readable_errors("Training"):
            for event in train_tiny(int(steps), int(seed), should_stop=_stop_requested.is_set):
                progress((event.step, event.steps), desc="Training", unit="steps")
                if event.probes:
                    probes = event.probes
                if event.step == 0:
                    status = "Step 0: random weights. Guesses are arbitrary tokens."
                else:
                    steps_done.append(event.step)
                    losses.append(event.loss)
                    status = (
                        f"Step {event.step} of {event.steps}: loss {event.loss:.2f} nats, "
                        f"{event.tokens_per_s:,.0f} tokens/s, {event.elapsed_s:.0f} s."
                    )
                    if event.done:
                        status += " Done."
                yield (
                    plots.training_figure(steps_done, losses, title="Tiny BERT, trained now"),
                    status,
                    plots.probes_frame(probes),
                )
        if _stop_requested.is_set() and " Done." not in status:  # the page cancels its stream; API callers see this
            yield (
                plots.training_figure(steps_done, losses, title="Tiny BERT, trained now (stopped)"),
                f"Stopped by Stop after step {steps_done[-1] if steps_done else 0} of {int(steps)}.",
                plots.probes_frame(probes),
            )
    finally:
        _run["owner"] = None
        _training_lock.release()


def stop_training(request: gr.Request = None) -> str:
    """Ask the live training run to stop after its current step (the ``stop_training`` API).

    Only the session that started the run can stop it: another visitor's Stop leaves it going.
    """
    if not _training_lock.locked():
        return "No live training run is going on."
    owner = _run["owner"]
    if owner is not None and session_of(request) != owner:
        return ("The run going on was started by another visitor: only they can stop it. "
                "It ends by itself after its steps.")
    _stop_requested.set()
    return "Stopping after the current step…"


def build_pretrain_tab() -> LinkTarget:
    history = _history()
    with gr.Tab("Pre-training", id="pretrain") as tab:
        gr.Markdown(copy.PRETRAIN_HELP)
        gr.Plot(value=history_figure(), label="Loss and held-out accuracy over training")
        choices = snapshot_choices()
        with gr.Row():
            snapshot = gr.Radio(
                choices=choices,
                value=choices[-1][1] if choices else None,
                label="What the model guessed at this point of its training",
            )
        probes = gr.Dataframe(
            value=snapshot_table(choices[-1][1] if choices else None),
            label="Probe sentences and top guesses",
            interactive=False,
            wrap=True,
            column_widths=["40%", "60%"],
        )
        snapshot.change(snapshot_table, snapshot, probes, api_name="training_snapshot")
        if history is not None:
            gr.Markdown(run_summary(history))

        gr.Markdown(copy.TRAIN_NOW_HELP)
        with gr.Row():
            steps = gr.Slider(10, TINY_MAX_STEPS, value=150, step=10, label="Steps")
            seed = gr.Number(value=0, precision=0, minimum=0, label="Seed")
            start = gr.Button("Train a tiny BERT now", variant="primary")
            stop = gr.Button("Stop")
        live_status = gr.Markdown("")
        live_plot = gr.Plot(error_figure(copy.LIVE_WAITING), label="Live training loss")
        live_probes = gr.Dataframe(plots.probes_frame([]), label="Its guesses on probe sentences", interactive=False,
                                   wrap=True, column_widths=["40%", "60%"])
        run = start.click(
            train_now,
            [steps, seed],
            [live_plot, live_status, live_probes],
            api_name="train_tiny",
            concurrency_limit=4,  # extra requests reach the lock and are refused politely
            concurrency_id="train_tiny",
        )
        # the browser cancels its own stream at once; the flag stops the loop for API callers too
        stop.click(stop_training, None, live_status, cancels=[run], api_name="stop_training")
        return LinkTarget("pre-training", tab)
