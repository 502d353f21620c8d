"""The GPU check's own logic that runs anywhere: which test files it skips and why, the peak table."""

from __future__ import annotations

import torch

from bench.forward import peak_flops
from scripts.gpu_check import importable
from models import get_spec


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


def test_embeds_flops_are_counted_where_its_batches_run_on_other_threads():
    """bench.forward's MFU of ``embed``: on a 2-thread CPU, ``embed`` runs its batches on two
    pool threads, which torch's FLOP counter (this thread only) did not see: it counted 0.
    Two groups of equal-length sentences (several batches, no padding within a group): about
    the FLOPs of the model's own forward over each group (pooling adds a little)."""
    from torch.utils.flop_counter import FlopCounterMode

    from bench.bench_common import without_onednn
    from bench.forward import count_flops
    from models import embed, load_model

    short, long = ["A cat sat."] * 64, ["The cat sat on the mat by the door. " * 20] * 64
    threads = torch.get_num_threads()
    counted = without_onednn(lambda: count_flops(lambda: embed("minilm-l6", short + long)))
    assert torch.get_num_threads() == threads  # put back
    loaded = load_model(get_spec("minilm-l6"), head="base")
    with FlopCounterMode(display=False) as forward, torch.inference_mode():
        for group in (short, long):
            loaded.model(**loaded.tokenizer(group, return_tensors="pt"))
    assert 0.99 < counted / forward.get_total_flops() < 1.01
