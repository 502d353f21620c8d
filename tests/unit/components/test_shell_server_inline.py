"""Cheap pre/postprocessing in place (components/shell/server.py: ``inline_cheap_processing``):
the same answers as Gradio's own path, which runs every step in a worker thread; only the
handler and the costly steps (a pandas frame, a figure object) still go to a thread."""

from __future__ import annotations

import asyncio
import inspect
import re
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import anyio
import gradio as gr
import pandas as pd
import plotly.graph_objects as go
from gradio import blocks as gradio_blocks

from components.shell import server
from components.shell.blocks import EncoderLabBlocks  # applies the patch


def test_gradio_blocks_uses_anyio_only_to_run_steps_in_a_thread():
    assert isinstance(gradio_blocks.anyio, server._InlineCheap)
    assert set(re.findall(r"\banyio\.[\w.]+", inspect.getsource(gradio_blocks))) == {"anyio.to_thread.run_sync"}
    assert server.inline_cheap_processing() is False  # applied once
    from gradio.components import dataframe  # polars' presence, looked up once

    assert dataframe._is_polars_available() is dataframe._is_polars_available.__wrapped__()  # the same answer
    assert dataframe._is_polars_available.cache_info().currsize == 1


def _demo():
    with EncoderLabBlocks() as demo:
        text, top_k, live = gr.Textbox(label="Text"), gr.Slider(1, 20, value=5, step=1), gr.Checkbox(True)
        model = gr.Dropdown([("A", "a"), ("B", "b")], value="a")
        outputs = [gr.HighlightedText(), gr.Dataframe(), gr.Dataframe(), gr.Plot(), gr.Plot(), gr.Markdown()]

        def answer(text, top_k, model, live):
            rows = [[1, rank, f"{text}-{rank}", 1 / rank] for rank in range(1, int(top_k) + 1)]
            figure = go.Figure(go.Bar(x=[1, 2], y=["a", model]))
            return ([(text, None), ("[MASK]", "mask")], {"headers": ["mask", "rank", "token", "p"], "data": rows},
                    pd.DataFrame(rows, columns=["mask", "rank", "token", "p"]), figure,
                    gr.components.plot.PlotData(type="plotly", plot=figure.to_json()), f"  **{live}**  ")

        text.submit(answer, [text, top_k, model, live], outputs, api_name="answer")
    return demo


def _run(demo, gradio_anyio, monkeypatch) -> tuple[dict, list[str]]:
    """The answer of one request, and the steps that went to a worker thread."""
    threaded = []

    async def run_sync(fn, *args, **kwargs):
        threaded.append(f"{type(getattr(fn, '__self__', None)).__name__}.{fn.__name__}")
        return await anyio.to_thread.run_sync(fn, *args, **kwargs)

    spy = SimpleNamespace(to_thread=SimpleNamespace(run_sync=run_sync))
    monkeypatch.setattr(gradio_blocks, "anyio", server._InlineCheap(spy) if gradio_anyio is None else spy)
    return _in_own_loop(demo.process_api(0, ["The cat", 3, "b", True], state=None))["data"], threaded


def _in_own_loop(coroutine):
    """``asyncio.run`` on a thread of its own: the suite's browser tests (Playwright's sync API)
    leave a running loop in the main thread, where ``asyncio.run`` refuses to start."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def test_the_same_answers_with_cheap_steps_in_place(monkeypatch):
    demo = _demo()
    ours, threaded = _run(demo, None, monkeypatch)
    gradios, all_steps = _run(demo, "gradio's own", monkeypatch)
    assert ours == gradios
    assert ours[1] == ours[2] and ours[3]["plot"] == ours[4]["plot"]  # rows = frame, JSON = figure
    assert len(all_steps) == 1 + 4 + 6  # the handler, each input, each output: all in threads
    assert threaded == ["NoneType.answer", "Dataframe.postprocess", "Plot.postprocess"]  # the frame, the figure
