"""Helpers every tab shares: escaping, showing tokens, readable errors, model pickers.

Imports neither Gradio nor Plotly at module level, so the ``*_plots`` modules can use it
and stay free of Gradio.
"""

from __future__ import annotations

import html
import inspect
import logging
import re
from contextlib import contextmanager

import torch

from models import EncoderLabError, run_owner, sentence_encoders

log = logging.getLogger("encoder_lab")

# Event settings for requests that keep the CPU/GPU busy for seconds (benchmarks, rate
# statistics over many draws): they share one queue slot, so at most one of them runs at a
# time and the quick requests (fill-mask, attention, ...) keep their own slots.
HEAVY = {"concurrency_id": "heavy", "concurrency_limit": 1}


def escape(text: str) -> str:
    """User- or model-supplied text made safe to show inside Markdown/HTML, or as text in a
    Plotly label, title or hover (Plotly reads a small HTML subset there)."""
    return html.escape(text, quote=False)


def count(n) -> str:
    """A count as tables show it: thousands separated (149,014,272); "" for a missing one."""
    return "" if n is None else f"{int(n):,}"


def show_token(token: str) -> str:
    """A token as a reader should see it: leading/trailing spaces made visible."""
    if token == "":
        return "∅"
    return token.replace(" ", "␣") if token.strip() != token else token


BYTE_LEVEL_SPACE = "\u0120"  # "Ġ": byte-level BPE's (RoBERTa, ModernBERT) spelling of a space


def show_piece(token: str) -> str:
    """A vocabulary entry (a raw token, e.g. "Ġsat") as ``show_token`` shows the decoded one
    (" sat" as "␣sat", as fill-mask's guesses read): byte-level BPE's space mark "Ġ" as a space."""
    return show_token(token.replace(BYTE_LEVEL_SPACE, " "))


def over_white(rgb: tuple[int, int, int], alpha: float) -> tuple[int, int, int]:
    """The opaque colour that ``rgb`` at opacity ``alpha`` shows on white: a shade that looks
    the same on the light and the dark theme (a translucent one would darken on dark)."""
    return tuple(round(255 + alpha * (c - 255)) for c in rgb)


def relative_luminance(rgb: tuple[int, int, int]) -> float:
    """WCAG 2.x relative luminance of an sRGB colour (0 black .. 1 white)."""
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (v / 255 for v in rgb)]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def text_colour_on(rgb: tuple[int, int, int]) -> str:
    """Near-black or white, whichever reads better on the background ``rgb`` (WCAG contrast)."""
    lum = relative_luminance(rgb)
    on_dark = (1.05) / (lum + 0.05)
    on_light = (lum + 0.05) / (relative_luminance((17, 17, 17)) + 0.05)
    return "#ffffff" if on_dark > on_light else "#111111"


def error_figure(message: str):
    """A blank Plotly figure that shows a message instead of a chart."""
    import plotly.graph_objects as go

    fig = go.Figure()
    fig.add_annotation(
        text=escape(message), showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper"
    )
    fig.update_layout(
        height=160,
        xaxis_visible=False,
        yaxis_visible=False,
        template="plotly_white",
        margin=dict(l=10, r=10, t=10, b=10),
    )
    return fig


def quoted(token: str) -> str:
    """A token shown inside Markdown prose: escaped, in bold quotes (not a code span, whose
    content Markdown would show with the escapes visible, and which a backtick could end)."""
    return "“**" + escape(token).replace("*", "\\*").replace("_", "\\_").replace("`", "\\`") + "**”"


def user_error(message: str):
    """A ``gr.Error`` shown to the user, with no traceback in the server's log: what a person
    typed or chose (or an endpoint was sent) is not the server's fault, and an unexpected
    failure is logged once, whole, by ``readable_errors`` before it becomes one of these
    (Gradio prints a ``gr.Error``'s traceback unless told not to)."""
    import gradio as gr

    return gr.Error(message, print_exception=False)


def session_of(request) -> str | None:
    """The visitor's session (a page, or one gradio_client ``Client``); None outside a request."""
    return getattr(request, "session_hash", None)


@contextmanager
def visitors_run(task: str, request):
    """``readable_errors`` for a handler that starts a live training run: the run belongs to the
    visitor's session, so another visitor's Stop leaves it going (``models.run_owner``)."""
    with readable_errors(task), run_owner(session_of(request)):
        yield


@contextmanager
def readable_errors(task: str):
    """Turn any failure inside a handler into a ``gr.Error`` a person can read.

    Project errors keep their own message; anything else is logged with its traceback
    and reported in one line. Either way the app keeps serving other requests.
    """
    import gradio as gr

    try:
        yield
    except gr.Error:
        raise
    except EncoderLabError as exc:
        raise user_error(escape(str(exc))) from exc
    except torch.OutOfMemoryError as exc:  # the GPU (or MPS) is full: free what we can, say so
        log.warning("%s ran out of device memory", task)
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        raise user_error(
            f"{task} ran out of GPU memory. Try a shorter text, fewer sentences or a smaller "
            "model; other requests are not affected."
        ) from exc
    except Exception as exc:  # unexpected: log it whole, tell the user in one line
        log.exception("%s failed", task)
        raise user_error(
            escape(f"{task} failed unexpectedly ({type(exc).__name__}: {exc}). "
                   "Other requests are not affected.")
        ) from exc


def model_choices(models, need_mlm: bool = False, by_key: bool = False,
                  usable_first: bool = True, mark_mlm: bool = False) -> list[tuple[str, str]]:
    """Model pickers' entries (label, key), each marked with why it cannot run here.

    ``need_mlm``: models without a trained MLM head stay listed (worth knowing about) but
    say so and come last. ``mark_mlm``: they say so but keep their place, for a picker
    whose main view runs without the head and only some views need it. ``by_key``: label
    by registry key instead of display name.
    ``usable_first``: available, then embedded models first; else the given order.
    """

    def label(m) -> str:
        name = m.key if by_key else m.display_name
        no_head = " (no MLM head)" if (need_mlm or mark_mlm) and not m.can("mlm") else ""
        if need_mlm and no_head:  # it cannot run here either way
            return name + no_head
        return name + no_head + ("" if m.available else " (not available here)")

    if usable_first:
        models = sorted(models, key=lambda m: (need_mlm and not m.can("mlm"), not m.available, not m.embedded))
    return [(label(m), m.key) for m in models]


def encoder_choices(models) -> list[tuple[str, str]]:
    """``model_choices(models)``, then the sentence encoders trained in this process (their
    ``sbert:`` keys load until the process ends): the Embeddings tab's and search's pickers."""
    return model_choices(models) + [(f"{key} (trained here)", key) for key in sentence_encoders()]


def api_only(fn, inputs, outputs, api_name: str, queue: bool = False) -> None:
    """``fn`` as a named API endpoint that updates ``outputs`` in the caller's session, fired
    by no control on the page: the page runs ``fn`` inside another event (a picker's entries,
    LinkTarget.pickers; the Attention tab's views, all in its one click event). Its trigger is
    a hidden button, which the page does not draw. ``queue``: through the queue (and its
    concurrency limits), for an endpoint that runs a model; off for a cheap listing."""
    import gradio as gr

    gr.Button(visible=False).click(fn, inputs, outputs, api_name=api_name, queue=queue)


def api_parameters(fn, names):
    """Give ``fn(*values)`` the parameter names the API shows (Gradio reads the signature).

    A handler over many inputs takes them as ``*values``; without this its endpoint lists
    them as param_1, param_2, ... Names are made identifiers and unique; returns ``fn``.
    """
    seen: dict[str, int] = {}
    params = []
    for name in names:
        base = re.sub(r"\W+", "_", str(name)).strip("_").lower() or "value"
        if base[0].isdigit():
            base = "_" + base
        seen[base] = seen.get(base, 0) + 1
        unique = base if seen[base] == 1 else f"{base}_{seen[base]}"
        params.append(inspect.Parameter(unique, inspect.Parameter.POSITIONAL_OR_KEYWORD))
    fn.__signature__ = inspect.Signature(params)
    return fn


def changed_choices(choices: list, known: list | None, values: tuple = (None,), default: str | None = None) -> tuple:
    """Picker updates for a tab's select event: ``(update, ..., known)``, one per picker, whose
    value is in ``values``. Each picker gets ``choices`` where they differ from ``known`` (what
    this session's pickers hold, a ``gr.State``); else nothing is sent, and the browser redraws
    nothing on arrival. A picker whose value is not among them (a sentence encoder trained
    here and pushed out by newer ones) is set to ``default``: left, Gradio refuses it."""
    import gradio as gr

    keys = [c[1] if isinstance(c, (tuple, list)) else c for c in choices]
    gone = [value is not None and value not in keys for value in values]
    same = known is not None and list(choices) == list(known)
    kept = gr.skip() if same else gr.update(choices=choices)
    updates = [gr.update(choices=choices, value=default) if stale else kept for stale in gone]
    return (*updates, gr.skip() if same else list(choices))
