"""cpu_workers: the per-core pool and the split vocabulary projection, against torch's own."""

from __future__ import annotations

import threading

import pytest
import torch

from models.cpu_workers import cpu_workers, project_rows


@pytest.mark.parametrize("rows", [1, 2, 3, 8])
@pytest.mark.parametrize("with_bias", [True, False])
def test_project_rows_is_the_linear_layer(rows, with_bias):
    generator = torch.Generator().manual_seed(rows)
    weight = torch.randn(1001, 64, generator=generator)  # an odd row count: unequal blocks
    bias = torch.randn(1001, generator=generator) if with_bias else None
    x = torch.randn(rows, 64, generator=generator)
    with torch.inference_mode():
        got = project_rows(weight, bias, x)
    expected = torch.nn.functional.linear(x, weight, bias)
    assert got.shape == (rows, 1001)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def test_workers_run_on_one_thread_and_leave_the_caller_alone():
    before = torch.get_num_threads()
    seen = list(cpu_workers().map(lambda _: (torch.get_num_threads(), threading.current_thread().name), range(4)))
    assert all(n == 1 for n, _ in seen)
    assert all(name.startswith("cpu-worker") for _, name in seen)
    assert torch.get_num_threads() == before
