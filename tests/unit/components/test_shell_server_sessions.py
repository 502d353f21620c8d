"""Gradio's per-session component configs, built when read (components/server.py): the same
configs as Gradio's own eager SessionState, before and after a request changes a component."""

from __future__ import annotations

import gradio as gr
from gradio import state_holder

from components.shell.blocks import EncoderLabBlocks  # applies the patch


def _demo():
    with EncoderLabBlocks() as demo:
        text = gr.Textbox("The [MASK] sat.", label="Text")
        top_k = gr.Slider(1, 20, value=5, step=1, label="Top-k")
        model = gr.Dropdown([("A", "a"), ("B", "b")], value="a", label="Model")
        with gr.Row():
            plot = gr.Plot()
            table = gr.Dataframe()
        text.submit(lambda t, k, m: (None, None), [text, top_k, model], [plot, table])
    return demo, top_k


def _eager(blocks):
    session = state_holder.SessionState.__new__(state_holder.SessionState)
    state_holder.SessionState._encoder_lab_original_init(session, blocks)
    return session


def test_lazy_configs_equal_gradios_eager_ones():
    assert state_holder.SessionState._encoder_lab_lazy
    demo, top_k = _demo()
    lazy, eager = state_holder.SessionState(demo), _eager(demo)
    assert vars(lazy).keys() == vars(eager).keys()
    assert dict.__len__(lazy.config_values) == 0  # nothing built for a new session
    assert lazy.config_values[top_k._id] == eager.config_values[top_k._id]
    assert list(lazy.components) == list(eager.components)  # a full read: every component
    assert dict(lazy.config_values.items()) == dict(eager.config_values.items())


def test_a_changed_component_reads_the_same_either_way():
    demo, top_k = _demo()
    lazy, eager = state_holder.SessionState(demo), _eager(demo)
    changed = gr.Slider(1, 10, value=3, step=1, label="Top-k")
    for session in (lazy, eager):
        session[top_k._id] = changed
        session._update_value_in_config(top_k._id, 4)
    assert lazy.config_values[top_k._id] == eager.config_values[top_k._id]
    assert lazy.config_values[top_k._id]["props"]["value"] == 4
    assert list(lazy.components) == list(eager.components)
    assert top_k._id in lazy.config_values and lazy.config_values.get(-1) is None
