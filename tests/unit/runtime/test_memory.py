"""The server's one memory budget (models/runtime/memory.py): what is dropped first, what stays,
and what a visitor whose run was dropped is told."""

from __future__ import annotations

import pytest

from models import InputError
from models.runtime import memory


class _Sized:
    def __init__(self, nbytes: int):
        self.nbytes = nbytes


@pytest.fixture
def budget(monkeypatch):
    """A budget of 1,000 bytes of its own, for the holders a test makes."""
    small = memory.MemoryBudget(1000, "a test's")
    monkeypatch.setattr(memory, "MEMORY", small)
    return small


def test_the_least_recently_used_goes_first_whichever_part_holds_it(budget):
    models, results = memory.ModelCache(10**9, part="models"), memory.ModelCache(10**9, part="results")
    models.get(("a",), lambda: _Sized(400))
    results.get(("r",), lambda: _Sized(300))
    models.get(("a",), lambda: _Sized(400))  # used again: now the result is the oldest
    models.get(("b",), lambda: _Sized(400))
    assert models.keys() == [("a",), ("b",)] and results.keys() == []
    assert budget.used_bytes() == 800 and budget.report().dropped == 1


def test_each_visitors_newest_run_stays_and_a_dropped_one_says_so(budget):
    runs = memory.KeptRuns("trained heads", "trained head", "train it again")
    cached = memory.ModelCache(10**9, part="results")
    for visitor, run_id in (("ann", "a1"), ("bob", "b1"), ("ann", "a2")):
        token = memory.VISITOR.set(visitor)
        try:
            runs.keep(run_id, run_id.upper(), 300)
        finally:
            memory.VISITOR.reset(token)
    cached.get(("r",), lambda: _Sized(300))  # over the budget: ann's older run goes
    assert [k for k, _ in runs.items()] == ["b1", "a2"] and runs.get("b1") == "B1"
    cached.get(("s",), lambda: _Sized(300))  # over again: the older result goes, not a visitor's newest run
    assert cached.keys() == [("s",)] and [k for k, _ in runs.items()] == ["b1", "a2"]
    with pytest.raises(InputError, match="a1.*dropped to keep the server within its memory budget.*train it again"):
        runs.get("a1")
    with pytest.raises(InputError, match="No trained head 'zz'"):
        runs.get("zz")


def test_a_model_bigger_than_the_budget_is_refused_with_the_reason(budget):
    with pytest.raises(InputError, match=r"model: bert-large in float32 needs about .* memory budget of"):
        budget.check_fits(2000, "bert-large in float32")
    budget.check_fits(1000, "fits")  # no error


def test_the_checkpoint_size_is_read_from_the_safetensors_header(tmp_path):
    import torch
    from safetensors.torch import save_file

    save_file({"w": torch.zeros(3, 5, dtype=torch.float16), "b": torch.zeros(7)}, tmp_path / "m.safetensors")
    assert memory.checkpoint_nbytes(tmp_path / "m.safetensors", 4) == (15 + 7) * 4


def test_the_default_budget_is_a_share_of_the_machine(monkeypatch):
    monkeypatch.delenv("ENCODER_LAB_MEMORY_MB", raising=False)
    monkeypatch.delenv("ENCODER_LAB_CACHE_MB", raising=False)
    total, _ = memory.machine_memory_bytes()
    assert memory.default_budget()[0] == int(total * memory.MACHINE_SHARE)
    monkeypatch.setenv("ENCODER_LAB_MEMORY_MB", "512")
    assert memory.default_budget() == (512 * 2**20, "ENCODER_LAB_MEMORY_MB")
