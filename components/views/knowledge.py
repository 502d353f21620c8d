"""The knowledge probe in the Fill-mask and Compare tabs: handlers and their small layouts.

The work is ``models.knowledge_probe``; the views are ``knowledge_plots``.
"""

from __future__ import annotations

import gradio as gr

from models import PROBE_SETS, knowledge_probe

from ..shell.common import model_choices, readable_errors
from ..shell.server import on_gpu
from ..shell.view_cache import cached_view
from . import knowledge_copy as copy
from . import knowledge_plots as views


@on_gpu
@cached_view()
def run_knowledge_probe(model_key: str, probe_set: str):
    """Summary and table of one model on a probe set (the ``knowledge_probe`` API)."""
    with readable_errors("Knowledge probe"):
        probe = knowledge_probe(model_key, probe_set)
        return views.probe_summary(probe), views.probe_frame(probe)


@on_gpu
@cached_view()
def run_compare_knowledge(model_a: str, model_b: str, probe_set: str):
    """Two models on one probe set, side by side (the ``compare_knowledge`` API)."""
    with readable_errors("Compare knowledge"):
        a, b = knowledge_probe(model_a, probe_set), knowledge_probe(model_b, probe_set)
        summary = views.probe_summary(a) + "  \n" + views.probe_summary(b)
        return summary, views.probe_pair_frame(a, b)


def build_knowledge_probe(model: gr.Dropdown) -> None:
    """The probe under the Fill-mask tab's examples, for the tab's chosen model."""
    with gr.Accordion("What does this model know?", open=False, elem_id="knowledge-probe"):
        gr.Markdown(copy.PROBE_HELP)
        with gr.Row():
            probe_set = gr.Radio(list(PROBE_SETS), value="facts", label=copy.PROBE_SET_LABEL)
            button = gr.Button(copy.PROBE_BUTTON)
        summary = gr.Markdown(elem_id="knowledge-summary")
        table = gr.Dataframe(label="Sentence, top 5, hit", elem_id="knowledge-table", interactive=False, wrap=True)
    button.click(run_knowledge_probe, [model, probe_set], [summary, table], api_name="knowledge_probe")


def build_compare_knowledge(models, default_pair: list[str]) -> tuple:
    """Two models' answers on a probe set, in the Compare tab; returns the view it shows on
    arrival, as ``(fn, inputs, outputs)``."""
    gr.Markdown(copy.COMPARE_HELP)
    choices = model_choices(models, need_mlm=True)
    with gr.Row():
        model_a = gr.Dropdown(choices, value=default_pair[0] if default_pair else None, label="Model A")
        model_b = gr.Dropdown(choices, value=default_pair[-1] if default_pair else None, label="Model B")
        probe_set = gr.Radio(list(PROBE_SETS), value="facts", label=copy.PROBE_SET_LABEL)
        button = gr.Button(copy.COMPARE_BUTTON)
    summary = gr.Markdown(elem_id="compare-knowledge-summary")
    table = gr.Dataframe(label="Side by side", elem_id="compare-knowledge", interactive=False, wrap=True)
    button.click(run_compare_knowledge, [model_a, model_b, probe_set], [summary, table],
                 api_name="compare_knowledge")
    return run_compare_knowledge, [model_a, model_b, probe_set], [summary, table]
