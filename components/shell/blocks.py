"""The app's ``gr.Blocks``: inputs that Gradio itself rejects get a readable message too;
each session within its limit of requests at once (``components/shell/session_limit.py``); every
event marked live for the first views' warm-up (``components/shell/warm_views.py``).

An API caller can send what no UI control can: ``null`` for a slider, a string for top-k,
too few values. Gradio rejects those before any handler runs, and reports only a
``gr.Error`` to the caller: anything else becomes ``{"error": null}``, no message at all.
This subclass turns those rejections into a ``gr.Error`` that names the input and says
what it takes, as the handlers' own errors (``readable_errors``) do for bad text.
"""

from __future__ import annotations

import logging

import gradio as gr
from gradio.blocks import postprocess_update_dict
from gradio.components import _Keywords

from .common import escape, user_error
from .server import inline_cheap_processing, lazy_session_configs
from .session_limit import LIMIT, SessionBusy, limit_queue
from .warm_views import LIVE

log = logging.getLogger("encoder_lab")
lazy_session_configs()  # Gradio's per-session config copies, built when read (server.py)
inline_cheap_processing()  # cheap pre/postprocessing in place, not in a worker thread (server.py)


def _label(block) -> str:
    if isinstance(block, gr.State):  # not in the API's listed parameters, but a place in the data
        return "the session's state: send null"
    return getattr(block, "label", None) or type(block).__name__


def _shown(value) -> str:
    text = repr(value)
    return escape(text if len(text) <= 40 else text[:37] + "...")


def expected(block) -> str:
    """What an input component takes, in words."""
    if isinstance(block, (gr.Slider, gr.Number)):
        low, high = getattr(block, "minimum", None), getattr(block, "maximum", None)
        if low is not None and high is not None:
            return f"a number from {low:g} to {high:g}"
        return "a number"
    if isinstance(block, gr.Checkbox):
        return "true or false"
    if isinstance(block, (gr.Dropdown, gr.Radio, gr.CheckboxGroup)):
        values = [value for _, value in (block.choices or [])]
        listed = ", ".join(map(str, values[:12])) + (", ..." if len(values) > 12 else "")
        many = " (a list)" if isinstance(block, gr.CheckboxGroup) or getattr(block, "multiselect", False) else ""
        return f"one of: {escape(listed)}{many}"
    if isinstance(block, gr.Textbox):
        return "text"
    return "a value of its type"


def bad_value_message(block, value) -> str:
    return f"“{escape(_label(block))}” takes {expected(block)}; this request sent {_shown(value)}."


class EncoderLabBlocks(gr.Blocks):
    """``gr.Blocks`` whose input checks answer with a message (see the module docstring)."""

    session_limit = LIMIT

    def queue(self, *args, **kwargs):
        super().queue(*args, **kwargs)
        limit_queue(self._queue, self.session_limit)  # a session's joins: at most its limit in
        return self

    async def process_api(self, *args, **kwargs):
        """Every event, queued or not: within its session's limit (``session_limit``), and
        marked live, so the first views' warm-up waits for it."""
        try:
            with self.session_limit.running(kwargs.get("session_hash")), LIVE.live():
                return await super().process_api(*args, **kwargs)
        except SessionBusy as exc:
            raise user_error(str(exc)) from None

    async def postprocess_data(self, block_fn, predictions, state):
        """Gradio's, with each empty update (``gr.skip()``) answered at once.

        For an update, Gradio builds a new instance of the output's component from its
        arguments and that component's whole config again (its API schema through pydantic),
        even when the update changes nothing: 8-15 % of the server's samples while a class
        types (bench/classroom.py --profile), where every keystroke before the ``[MASK]`` is
        complete answers with skips. An empty update changes no property, so its answer is
        what ``postprocess_update_dict`` makes of it on the session's own block, the very
        function Gradio ends with (a test compares the two paths); the rest goes to Gradio.
        """
        outputs = block_fn.outputs
        if isinstance(predictions, dict) and predictions == gr.skip() and len(outputs) > 1:
            predictions = [gr.skip()] * len(outputs)  # as Gradio reads a single skip for many outputs
        if not isinstance(predictions, (list, tuple)) or len(predictions) != len(outputs) or len(outputs) < 2:
            return await super().postprocess_data(block_fn, predictions, state)
        empty = [i for i, value in enumerate(predictions)
                 if isinstance(value, dict) and value == {"__type__": "update"} and not outputs[i].stateful]
        if not empty:
            return await super().postprocess_data(block_fn, predictions, state)
        marked = list(predictions)
        for i in empty:
            marked[i] = _Keywords.FINISHED_ITERATING  # Gradio's own "nothing here" (answered None)
        answered = await super().postprocess_data(block_fn, marked, state)
        for i in empty:
            block = state.get(outputs[i]._id, outputs[i]) if state is not None else outputs[i]
            answered[i] = postprocess_update_dict(block, {"__type__": "update"}, block_fn.postprocess)
        return answered

    def validate_inputs(self, block_fn, inputs):
        wanted = list(block_fn.inputs)
        if len(inputs) < len(wanted):
            names = ", ".join(f"“{escape(_label(b))}”" for b in wanted)
            raise user_error(
                f"This endpoint takes {len(wanted)} input value(s) ({names}); the request sent "
                f"{len(inputs)}. Send one value per input, in that order."
            )
        return super().validate_inputs(block_fn, inputs)

    async def preprocess_data(self, block_fn, inputs, state, explicit_call: bool = False):
        for block, value in zip(block_fn.inputs, inputs):
            # an empty number box (or a null sent to the API): Gradio passes None on, and every
            # number here has a value that means something (none means "default")
            if value is None and isinstance(block, (gr.Slider, gr.Number)):
                raise user_error(bad_value_message(block, value) + " Type a number.")
        try:
            return await super().preprocess_data(block_fn, inputs, state, explicit_call)
        except gr.Error as exc:
            if exc.print_exception:  # Gradio's own refusal (a choice not offered): the value is the sender's
                raise user_error(escape(str(exc.message))) from None
            raise
        except Exception as exc:
            for i, block in enumerate(block_fn.inputs):  # find the input that was refused
                if getattr(block, "stateful", False) or i >= len(inputs):
                    continue
                if state is not None and block._id in state:
                    block = state[block._id]  # this session's copy (its current range)
                try:
                    block.preprocess(inputs[i])
                except Exception:  # noqa: BLE001 (any refusal of this value)
                    raise user_error(bad_value_message(block, inputs[i])) from exc
            log.warning("input preprocessing failed: %s", exc)
            raise user_error(f"The request's input values could not be read ({escape(type(exc).__name__)}).") from exc
