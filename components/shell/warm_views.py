"""First visit: every tab's and every lesson step's default view, computed in the background
right after start-up, in the order a visitor meets them, behind the live requests.

Each tab computes its default view on arrival (``LinkTarget.views``, cached per process by
``cached_view``); without this, the first visitor after a start (a Space waking up for a
class) pays for each one. ``first_views(targets)`` lists them: each tab's arrival views in
tab order, the Lessons tab's with every step in the lesson's order; then the views of the
tabs' further sections (sub-tabs a visitor opens from there), in the same order.
``warm(plan)`` runs them one at a time; before each it waits until no live request is being
processed (``LIVE``: ``EncoderLabBlocks.process_api`` holds it for every event), and its
thread runs at the lowest CPU priority, so the first fill-mask answer is not slowed by it.
A view that fails (a model that cannot load here) is skipped; its tab says why on arrival.

The Lessons' live-training steps train short runs here; they run as ``background_runs``, so a
user's training request that arrives meanwhile waits for one instead of being told the
process is busy. ``ENCODER_LAB_WARM=0`` turns it off. Under ZeroGPU (``spaces`` installed) it stays off: the
GPU is lent per request there, and a background call outside one would fail or use quota.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from contextlib import contextmanager

from models import background_runs

from .server import freeze_long_lived

log = logging.getLogger("encoder_lab")


class LiveGate:
    """Live requests first: the background computes only while no request is in progress."""

    def __init__(self):
        self._cond = threading.Condition()
        self._live = 0

    @contextmanager
    def live(self):
        with self._cond:
            self._live += 1
        try:
            yield
        finally:
            with self._cond:
                self._live -= 1
                self._cond.notify_all()

    def in_progress(self) -> int:
        return self._live

    def wait_idle(self, settle_s: float = 0.05) -> None:
        """Return once no live request has run for ``settle_s`` (a burst's next request
        usually follows within that)."""
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._live == 0)
            time.sleep(settle_s)
            with self._cond:
                if self._live == 0:
                    return


LIVE = LiveGate()


def first_views(targets) -> list[tuple[str, object]]:
    """(label, thunk) per default view, in the order a visitor meets them: the tabs in order,
    the Lessons tab's steps in the lesson's order where the tab stands; then each tab's
    further sections (``LinkTarget.sections``), labelled ``<tab>: <section>``."""
    plan = []
    for target in targets:
        for fn, inputs, *_ in target.views:
            values = _defaults(inputs)
            step = target.inputs.get("lesson")
            if step is not None and inputs and inputs[0] is step:  # the Lessons tab: every step
                plan += [(f"{target.slug}: {slug}", _thunk(fn, [slug, *values[1:]])) for _, slug in step.choices]
            else:
                plan.append((target.slug, _thunk(fn, values)))
    for target in targets:
        for section in target.sections:
            for fn, inputs, *_ in section.views:
                plan.append((f"{target.slug}: {section.name}", _thunk(fn, _defaults(inputs))))
    return plan


def _defaults(inputs) -> list:
    """The inputs' values as the page is built (what a first visitor's page holds)."""
    return [getattr(block, "value", None) for block in inputs]


def _thunk(fn, values):
    return lambda: fn(*values)


def warm(plan, gate: LiveGate = LIVE) -> list[tuple[str, bool]]:
    """Compute each view in turn, each after the live requests; [(label, computed)]."""
    done = []
    for label, thunk in plan:
        gate.wait_idle()
        try:
            thunk()
            done.append((label, True))
        except Exception as exc:  # noqa: BLE001  (a view that cannot run here: its tab says why)
            log.info("first views: %s skipped (%s)", label, exc)
            done.append((label, False))
    return done


def enabled() -> bool:
    from .server import queue_live_events

    return os.environ.get("ENCODER_LAB_WARM", "1") != "0" and not queue_live_events()


def warm_in_background(plan) -> threading.Thread | None:
    """Start ``warm(plan)`` on a daemon thread at the lowest priority (None when turned off)."""
    if not enabled():
        return None

    def run():
        try:  # Linux: a thread is a task of its own; elsewhere the priority stays
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        except (AttributeError, OSError):
            pass
        start = time.monotonic()
        with background_runs():  # the Lessons' training runs give way to a user's run
            done = warm(plan)
        frozen = freeze_long_lived()  # what the warm-up built stays: out of the collector's walks
        log.info("first views: %d of %d computed in %.1f s (%d objects frozen)", sum(ok for _, ok in done),
                 len(done), time.monotonic() - start, frozen)

    thread = threading.Thread(target=run, name="encoder-lab-first-views", daemon=True)
    thread.start()
    return thread
