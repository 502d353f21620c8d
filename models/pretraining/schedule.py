"""A training run's schedule: how far along it is, its learning rate, and when to snapshot.

Two modes, one object:

* **by steps** (``minutes=0``): progress is ``step / steps``; the learning rate follows
  transformers' ``get_linear_schedule_with_warmup`` (linear warm-up over ``warmup`` of the
  steps, then linear decay to zero); snapshots at ``round(fraction * steps)``.
* **by a wall-clock budget** (``minutes > 0``): progress is
  ``max(step / steps, elapsed / budget)``, so a run fits the time a machine has and still
  ends with its rate decayed to zero; the same warm-up/decay shape is applied to that
  progress (read at the last optimiser step), and a snapshot is taken at the first step
  whose progress reaches each fraction, and at the end.

The run ends when progress reaches 1. ``clock`` is injectable so tests need not wait.
"""

from __future__ import annotations

import time
from typing import Callable

import torch
from transformers import get_linear_schedule_with_warmup


class TrainingSchedule:
    """Progress, learning-rate multiplier and snapshot steps of one run (see module doc)."""

    def __init__(self, steps: int, warmup: float, snapshot_fractions=(), minutes: float = 0.0,
                 clock: Callable[[], float] | None = None):
        self.steps = steps
        self.warmup = warmup  # share of the run spent warming up
        self.budget_s = minutes * 60
        self.clock = clock or time.monotonic  # looked up now: a test may replace the module's clock
        self.started = self.clock()
        self.share = 0.0  # progress at the last optimiser step, in [0, 1]
        fractions = tuple(snapshot_fractions)
        if self.by_time:
            self._pending = sorted(f for f in fractions if f > 0)  # fractions not reached yet
            self.snapshot_steps = [0] if 0.0 in fractions else []
        else:
            self._pending = []
            self.snapshot_steps = sorted({round(f * steps) for f in fractions})

    @property
    def by_time(self) -> bool:
        return self.budget_s > 0

    @property
    def finished(self) -> bool:
        return self.share >= 1.0

    def elapsed(self) -> float:
        return self.clock() - self.started

    def progress(self, step: int) -> float:
        """The share of the run done after ``step`` optimiser steps."""
        by_time = self.elapsed() / self.budget_s if self.by_time else 0.0
        return min(1.0, max(step / self.steps, by_time))

    def advance(self, step: int) -> float:
        """Record that optimiser step ``step`` was taken; returns the progress."""
        self.share = self.progress(step)
        if self._pending and self.share >= self._pending[0]:
            self.snapshot_steps.append(step)
            while self._pending and self.share >= self._pending[0]:
                self._pending.pop(0)
        return self.share

    def is_snapshot(self, step: int) -> bool:
        return step in self.snapshot_steps or (self.finished and self.by_time)

    def multiplier(self, _step: int = 0) -> float:
        """The learning-rate factor for the budget mode: warm-up, then decay, on progress."""
        p = self.share
        return p / self.warmup if p < self.warmup else max(0.0, (1 - p) / (1 - self.warmup))

    def lr_scheduler(self, optimizer: torch.optim.Optimizer) -> torch.optim.lr_scheduler.LRScheduler:
        """The optimiser's scheduler: transformers' linear warm-up/decay by steps, or the
        same shape on the progress of the budget."""
        if self.by_time:
            return torch.optim.lr_scheduler.LambdaLR(optimizer, self.multiplier)
        return get_linear_schedule_with_warmup(optimizer, int(self.warmup * self.steps), self.steps)
