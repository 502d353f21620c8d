"""Gradio's run history (every call's inputs and outputs kept in the browser) is off unless
the operator asks for it with Gradio's own GRADIO_RUN_HISTORY."""

from __future__ import annotations

import pytest

import app


@pytest.mark.parametrize("value, expected", [(None, False), ("false", False), ("0", False), ("true", True),
                                             (" True ", True)])
def test_run_history_follows_gradios_variable_and_is_off_without_it(monkeypatch, value, expected):
    if value is None:
        monkeypatch.delenv("GRADIO_RUN_HISTORY", raising=False)
    else:
        monkeypatch.setenv("GRADIO_RUN_HISTORY", value)
    assert app.launch_kwargs()["run_history"] is expected


def test_a_launch_with_it_off_tells_the_page_and_drops_the_runs_link(monkeypatch):
    """What launch() does with the setting: the page's config says so (the frontend then
    records nothing) and the footer has no link to the runs page."""
    import gradio as gr

    monkeypatch.delenv("GRADIO_RUN_HISTORY", raising=False)
    with gr.Blocks() as demo:
        gr.Textbox()
    demo.launch(prevent_thread_lock=True, quiet=True, run_history=app.launch_kwargs()["run_history"])
    try:
        config = demo.get_config_file()
        assert config["run_history"] is False
        assert "runs" not in demo.footer_links
    finally:
        demo.close()
