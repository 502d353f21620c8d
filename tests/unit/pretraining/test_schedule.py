"""The training schedule, both modes, on a fake clock: linear warm-up then linear decay to
zero, over the steps or over a wall-clock budget, and the snapshot points of each."""

from __future__ import annotations

import pytest
import torch

from models.pretraining.schedule import TrainingSchedule


def _optimizer():
    return torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)


def _lr(optimizer) -> float:
    return optimizer.param_groups[0]["lr"]


def test_by_steps_warms_up_then_decays_to_zero():
    plan = TrainingSchedule(steps=100, warmup=0.1, snapshot_fractions=(0.0, 0.25, 1.0))
    assert not plan.by_time and plan.snapshot_steps == [0, 25, 100]
    optimizer = _optimizer()
    schedule = plan.lr_scheduler(optimizer)
    lrs = {}
    for step in range(1, 101):
        plan.advance(step)
        schedule.step()
        lrs[step] = _lr(optimizer)
        assert plan.finished == (step == 100)
    assert lrs[5] == pytest.approx(0.5)  # half-way through 10 warm-up steps
    assert lrs[10] == pytest.approx(1.0)
    assert lrs[55] == pytest.approx(0.5)  # half-way through the 90 decay steps
    assert lrs[100] == 0.0
    assert [s for s in range(101) if plan.is_snapshot(s)] == [0, 25, 100]


def test_by_budget_follows_the_clock_and_snapshots_when_a_fraction_is_reached():
    now = [0.0]
    plan = TrainingSchedule(steps=10**6, warmup=0.1, snapshot_fractions=(0.0, 0.5, 1.0),
                            minutes=100 / 60, clock=lambda: now[0])  # a 100-second budget
    optimizer = _optimizer()
    schedule = plan.lr_scheduler(optimizer)
    assert plan.by_time and plan.snapshot_steps == [0] and _lr(optimizer) == 0.0

    def step_at(seconds: float, step: int) -> float:
        now[0] = seconds
        share = plan.advance(step)
        schedule.step()
        return share

    assert step_at(5.0, 1) == pytest.approx(0.05) and _lr(optimizer) == pytest.approx(0.5)
    assert not plan.is_snapshot(1)
    assert step_at(55.0, 2) == pytest.approx(0.55) and _lr(optimizer) == pytest.approx(0.5)
    assert plan.is_snapshot(2) and plan.snapshot_steps == [0, 2]  # first step past 50 %
    assert step_at(70.0, 3) == pytest.approx(0.7) and not plan.is_snapshot(3)
    assert step_at(100.0, 4) == 1.0 and _lr(optimizer) == 0.0
    assert plan.finished and plan.is_snapshot(4) and plan.elapsed() == 100.0


def test_by_budget_the_step_count_can_end_the_run_first():
    plan = TrainingSchedule(steps=4, warmup=0.25, minutes=60, clock=lambda: 0.0)
    shares = [plan.advance(step) for step in range(1, 5)]
    assert shares == [0.25, 0.5, 0.75, 1.0] and plan.finished
