"""The Models tab: the registry, what each model is and whether it runs here."""

from __future__ import annotations

import gradio as gr

from models import list_models, memory_budget

from ..shell.deep_links import LinkTarget
from . import copy
from . import plots


def models_table():
    """The registry with availability checked now (the ``list_models`` API)."""
    return plots.models_frame(list_models())


def memory_view() -> str:
    """The server's memory budget and what it keeps now (the ``memory_budget`` API)."""
    return plots.memory_markdown(memory_budget())


def build_models_tab() -> LinkTarget:
    with gr.Tab("Models", id="models") as tab:
        gr.Markdown(copy.MODELS_HELP)
        table = gr.Dataframe(value=models_table(), label="Model registry", interactive=False, wrap=True)
        memory = gr.Markdown(memory_view(), elem_id="memory-budget")
        refresh = gr.Button("Check again")
        refresh.click(models_table, None, table, api_name="list_models")
        refresh.click(memory_view, None, memory, api_name="memory_budget")
        tab.select(memory_view, None, memory, api_visibility="private")  # what the server keeps now
    return LinkTarget("models", tab)
