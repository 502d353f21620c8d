"""The UI's error translation: project errors, device out-of-memory, unexpected failures."""

from __future__ import annotations

import gradio as gr
import pytest
import torch

from components.shell.common import readable_errors
from models import InputError


def test_project_error_keeps_its_message_escaped():
    with pytest.raises(gr.Error) as info:
        with readable_errors("Fill-mask"):
            raise InputError("bad <b>input</b>")
    assert info.value.message == "bad &lt;b&gt;input&lt;/b&gt;"


def test_out_of_memory_is_reported_not_crashed():
    with pytest.raises(gr.Error) as info:
        with readable_errors("Embedding"):
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    assert "ran out of GPU memory" in info.value.message
    assert "other requests are not affected" in info.value.message


def test_unexpected_error_is_one_readable_line():
    with pytest.raises(gr.Error) as info:
        with readable_errors("Attention"):
            raise KeyError("<script>")
    assert "Attention failed unexpectedly (KeyError" in info.value.message
    assert "<script>" not in info.value.message


def test_on_gpu_is_a_no_op_without_the_spaces_package():
    from components.shell.server import on_gpu

    def handler(x):
        return x + 1

    assert on_gpu(handler) is handler


def test_on_gpu_uses_zerogpu_when_spaces_is_installed(tmp_path, monkeypatch):
    """A stand-in `spaces` package on the path: its GPU decorator wraps the handler."""
    (tmp_path / "spaces.py").write_text(
        "wrapped = []\n"
        "def GPU(fn):\n"
        "    wrapped.append(fn.__name__)\n"
        "    def run(*a, **k):\n"
        "        return ('on gpu', fn(*a, **k))\n"
        "    return run\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    from components.shell import server

    importlib.invalidate_caches()

    def handler(x):
        return x + 1

    try:
        decorated = server.on_gpu(handler)
        import spaces

        assert spaces.wrapped == ["handler"]
        assert decorated(1) == ("on gpu", 2)
    finally:  # not monkeypatch.delitem, which would put the stand-in back after the test
        __import__("sys").modules.pop("spaces", None)


def test_model_choices_mark_why_a_model_cannot_run():
    from components.shell.common import model_choices
    from models import ModelSpec

    def M(**fields):  # a spec as list_models gives it: what the picker reads through spec.can
        return ModelSpec(family="bert", source="", source_kind="local", mask_token="[MASK]",
                         returns_attention=True, provenance="a test's spec", **fields)

    models = [
        M(key="online", display_name="Online", available=False, embedded=False, has_mlm_head=True),
        M(key="enc", display_name="Encoder", available=True, embedded=True, has_mlm_head=False),
        M(key="mlm", display_name="MLM", available=True, embedded=True, has_mlm_head=True),
    ]
    assert model_choices(models) == [
        ("Encoder", "enc"), ("MLM", "mlm"), ("Online (not available here)", "online")]
    assert model_choices(models, need_mlm=True) == [
        ("MLM", "mlm"), ("Online (not available here)", "online"), ("Encoder (no MLM head)", "enc")]
    online_encoder = M(key="oenc", display_name="Online encoder", available=False, embedded=False,
                       has_mlm_head=False)
    assert model_choices([*models, online_encoder], mark_mlm=True) == [  # marked, in their place
        ("Encoder (no MLM head)", "enc"), ("MLM", "mlm"), ("Online (not available here)", "online"),
        ("Online encoder (no MLM head) (not available here)", "oenc")]
    assert model_choices(models, by_key=True, usable_first=False) == [
        ("online (not available here)", "online"), ("enc", "enc"), ("mlm", "mlm")]


def _live_event_queued() -> bool:
    from components.fill_mask.tab import build_fill_mask_tab

    with gr.Blocks() as demo:
        with gr.Tabs():
            build_fill_mask_tab()
    events = [d for d in demo.config["dependencies"] if d.get("api_name") == "fill_mask_live"]
    assert len(events) == 1
    return events[0]["queue"] is not False


def test_live_fill_mask_is_unqueued_except_under_zerogpu(tmp_path, monkeypatch):
    """Per-keystroke fill-mask skips the queue's bookkeeping; with `spaces` (ZeroGPU, whose
    decorator runs through the queue) it stays queued."""
    import importlib
    import sys

    assert not _live_event_queued()
    (tmp_path / "spaces.py").write_text("def GPU(fn):\n    return fn\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    try:
        assert _live_event_queued()
    finally:
        sys.modules.pop("spaces", None)


def test_cuda_graphs_are_off_under_zerogpu_and_on_elsewhere(tmp_path, monkeypatch):
    """app.py settles the GPU paths at start: with `spaces` (ZeroGPU lends the GPU a call at a
    time) fill-mask's CUDA graphs go off."""
    import importlib
    import sys

    from components.shell.server import settle_gpu_paths
    from models.runtime import use_cuda_graphs
    from models.runtime.cuda_graphs import cuda_graphs_enabled

    previous = use_cuda_graphs(False)
    try:
        assert settle_gpu_paths() is True and cuda_graphs_enabled()
        (tmp_path / "spaces.py").write_text("def GPU(fn):\n    return fn\n")
        monkeypatch.syspath_prepend(str(tmp_path))
        importlib.invalidate_caches()
        try:
            assert settle_gpu_paths() is False and not cuda_graphs_enabled()
        finally:
            sys.modules.pop("spaces", None)
    finally:
        use_cuda_graphs(previous)
