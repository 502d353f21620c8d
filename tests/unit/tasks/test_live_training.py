"""The process's one live-training slot: a run started as a background run (the app's warm-up
of the Lessons' default views) is waited for by a request instead of refused, and a stop
request leaves it alone; a user's run is refused with the busy message, as before."""

from __future__ import annotations

import threading
import time

import pytest

from models import InputError, background_runs, live_heads, live_training_busy, stop_live_training
from models.tasks import live_training


def _hold(seconds: float, background: bool, started: threading.Event, log: list):
    def run():
        def body():
            with live_training.exclusive_run("a lesson's default run"):
                started.set()
                time.sleep(seconds)
                log.append(("background ended", time.monotonic()))

        if background:
            with background_runs():
                body()
        else:
            body()

    return threading.Thread(target=run)


def test_a_request_waits_for_a_background_run_and_cannot_stop_it():
    started, log = threading.Event(), []
    worker = _hold(0.6, True, started, log)
    worker.start()
    assert started.wait(10)
    assert live_training_busy()
    assert stop_live_training().startswith("Nothing to stop")
    assert not live_training._STOP.is_set()
    with live_training.exclusive_run("a user's run"):  # waits, then runs
        log.append(("user started", time.monotonic()))
    worker.join(10)
    assert [what for what, _ in log] == ["background ended", "user started"]
    assert not live_training_busy()


def test_a_users_run_is_still_refused_at_once_when_another_users_run_holds_the_slot():
    started, log = threading.Event(), []
    worker = _hold(0.6, False, started, log)
    worker.start()
    assert started.wait(10)
    began = time.monotonic()
    with pytest.raises(InputError, match="Busy: a lesson's default run is running"):
        with live_training.exclusive_run("a user's run"):
            pass
    assert time.monotonic() - began < 0.3  # refused, not waited for
    assert stop_live_training().startswith("Stop requested")
    worker.join(10)


def test_live_heads_lists_the_kept_pair_and_span_heads():
    store = live_training.HeadStore("test", 2, "a trainer", "a button")
    first = store.keep(object(), "mini-bert")
    second = store.keep(object(), "mini-bert")
    assert {first, second} <= set(live_heads())
    third = store.keep(object(), "mini-bert")  # the oldest is pushed out
    assert first not in live_heads() and {second, third} <= set(live_heads())


TINY = dict(steps=5, seed=0, batch_size=8, sentences=["The cat sat on the mat.", "She opened the door."] * 16)


def _tiny_losses():
    from models import train_tiny

    return [e.loss for e in train_tiny(**TINY) if e.step]


def test_a_tiny_bert_is_not_trained_beside_another_visitors_live_run():
    """Both draw dropout from torch's one global generator: trained beside a sentence encoder, a
    tiny BERT's seed gave another curve than the same seed alone (and the encoder's likewise).
    The tiny run takes the process's one live-training slot: refused while another run holds it."""
    from models import train_sentence_encoder

    alone = _tiny_losses()
    worker = threading.Thread(target=lambda: train_sentence_encoder("mini-bert", steps=1000, max_seconds=120))
    worker.start()
    try:
        deadline = time.monotonic() + 60
        while not live_training_busy() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert live_training_busy()
        try:
            beside = _tiny_losses()
        except InputError as exc:
            beside = str(exc)
    finally:
        stop_live_training()
        worker.join()
    assert beside != alone or pytest.fail("not refused, yet the same curve: the test did not overlap the runs")
    assert beside.startswith("Busy: training a sentence encoder on mini-bert")


def test_a_tiny_bert_run_is_stopped_only_from_its_own_tab():
    from models import train_tiny

    events = train_tiny(**TINY)
    next(events)  # the slot is held from the first event
    assert live_training_busy()
    answer = stop_live_training()
    with pytest.raises(InputError, match=r"tiny BERT .*Wait for it to end, then try again"):
        live_training.exclusive_run("another run").__enter__()
    rest = list(events)
    assert "tiny BERT" in answer and "Stop requested" not in answer
    assert rest[-1].done and rest[-1].step == TINY["steps"]
    assert not live_training_busy()
