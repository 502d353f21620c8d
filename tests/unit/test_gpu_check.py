"""The GPU check's own logic that runs anywhere: which test files it skips and why, the peak table."""

from __future__ import annotations

import torch

from bench.forward import peak_flops
from scripts.gpu_check import importable


def test_a_test_file_that_needs_a_missing_module_is_skipped_and_named(tmp_path):
    (tmp_path / "test_needs_ui.py").write_text("import encoder_lab_no_such_module\n")
    (tmp_path / "test_plain.py").write_text("import json\n")
    files = [str(tmp_path / "test_needs_ui.py"), str(tmp_path / "test_plain.py")]
    runnable, skipped = importable(files, {"PATH": "/usr/bin:/bin"})
    assert runnable == [files[1]]
    assert skipped == {files[0]: "needs encoder_lab_no_such_module"}


def test_peak_table_matches_variants_before_the_family(monkeypatch):
    cuda = torch.device("cuda")
    for name, fp16 in (("NVIDIA H200", 989.4), ("NVIDIA H200 NVL", 835.5), ("NVIDIA H100 PCIe", 756.5)):
        monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None, name=name: name)
        value, why = peak_flops(cuda, torch.float16)
        assert value == fp16 * 1e12, why
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "Some Future GPU")
    assert peak_flops(cuda, torch.float16)[0] is None
    assert peak_flops(torch.device("cpu"), torch.float32)[0] is None
    assert peak_flops(torch.device("cpu"), torch.float32, override_tflops=2.0)[0] == 2e12
