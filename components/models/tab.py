"""The Models tab: the registry, what each model is and whether it runs here."""

from __future__ import annotations

import gradio as gr

from models import list_models

from ..shell.deep_links import LinkTarget
from . import copy
from . import plots


def models_table():
    """The registry with availability checked now (the ``list_models`` API)."""
    return plots.models_frame(list_models())


def build_models_tab() -> LinkTarget:
    with gr.Tab("Models", id="models") as tab:
        gr.Markdown(copy.MODELS_HELP)
        table = gr.Dataframe(value=models_table(), label="Model registry", interactive=False, wrap=True)
        refresh = gr.Button("Check again")
        refresh.click(models_table, None, table, api_name="list_models")
    return LinkTarget("models", tab)
