"""cpu_workers: one single-threaded torch worker per core, the caller's threads untouched."""

from __future__ import annotations

import threading

import torch

from models.cpu_workers import cpu_workers


def test_workers_run_on_one_thread_and_leave_the_caller_alone():
    before = torch.get_num_threads()
    seen = list(cpu_workers().map(lambda _: (torch.get_num_threads(), threading.current_thread().name), range(4)))
    assert all(n == 1 for n, _ in seen)
    assert all(name.startswith("cpu-worker") for _, name in seen)
    assert torch.get_num_threads() == before
