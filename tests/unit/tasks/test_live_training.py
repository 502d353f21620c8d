"""The process's one live-training slot: a run started as a background run (the app's warm-up
of the Lessons' default views) is waited for by a request instead of refused, and a stop
request leaves it alone; a user's run is refused with the busy message, as before."""

from __future__ import annotations

import threading
import time

import pytest
import torch

from models import InputError, background_runs, live_heads, stop_live_training
from models.tasks.live_training import live_training_busy
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
    store = live_training.HeadStore("test", "a trainer", "a button")
    first = store.keep(torch.nn.Linear(2, 2), "mini-bert")
    second = store.keep(torch.nn.Linear(2, 2), "mini-bert")
    assert {first, second} <= set(live_heads())
    store.runs.drop(first)  # dropped, as the memory budget would
    assert first not in live_heads() and second in live_heads()
    with pytest.raises(InputError, match="dropped to keep the server within its memory budget.*a button"):
        store.get(first)


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


def test_a_classifier_fine_tune_takes_the_live_training_slot(monkeypatch):
    """Fine-tuning a copy of the encoder from plain arguments (``train_classifier(freeze=False)``)
    trains a body as a sentence encoder or a pair head does: before, it ran beside them (both
    drawing dropout from torch's one generator, two trainings on the server's cores at once).
    Now it is refused while another run holds the slot, holds the slot itself, and a stop request
    while it runs says it is not stopped (it has no Stop: it ends after its epochs)."""
    from models import train_classifier
    from models.tasks import classifier

    # while another visitor's run holds the slot: refused with the busy message
    started, release = threading.Event(), threading.Event()

    def other_run():
        with live_training.exclusive_run("training a sentence encoder on mini-bert"):
            started.set()
            release.wait(60)

    worker = threading.Thread(target=other_run)
    worker.start()
    try:
        assert started.wait(30)
        with pytest.raises(InputError, match=r"^Busy: training a sentence encoder on mini-bert"):
            train_classifier("mini-bert", "fiction-speech", freeze=False, epochs=1, train_size=16)
        # a probe on frozen features is no run: it trains beside it (as docs/deployment.md says)
        probe = train_classifier("mini-bert", "fiction-speech", epochs=1, train_size=16)
        assert probe.freeze and len(probe.validation_accuracy) == 1
    finally:
        release.set()
        worker.join()

    # while it runs: it holds the slot, and a stop request leaves it going
    inside, go = threading.Event(), threading.Event()
    real = classifier.finetune

    def held_finetune(*args):
        inside.set()
        go.wait(60)
        return real(*args)

    monkeypatch.setattr(classifier, "finetune", held_finetune)
    results = []
    runner = threading.Thread(target=lambda: results.append(
        train_classifier("mini-bert", "fiction-speech", freeze=False, epochs=1, train_size=16)))
    runner.start()
    try:
        assert inside.wait(60)
        assert live_training_busy()
        answer = stop_live_training()
    finally:
        go.set()
        runner.join()
    assert answer.startswith("Nothing stopped: fine-tuning mini-bert on fiction-speech"), answer
    assert len(results) == 1 and len(results[0].validation_accuracy) == 1  # it ran to its end
    assert not live_training_busy()


def test_a_run_started_for_a_visitor_is_stopped_by_that_visitor_or_a_notebook_only():
    """``run_owner``: the app starts a visitor's run inside it; another visitor's stop request is
    refused with a message, the visitor's own and an ownerless one (a notebook) stop it."""
    from models import run_owner

    started, release = threading.Event(), threading.Event()
    stopped = []

    def visitors_run():
        with run_owner("page-a"), live_training.exclusive_run("training a sentence encoder on mini-bert"):
            budget = live_training.Budget(60)
            started.set()
            release.wait(30)
            stopped.append(budget.over())

    for asker, stops in (("page-b", False), ("page-a", True), (None, True)):
        started.clear(), release.clear()
        stopped.clear()
        worker = threading.Thread(target=visitors_run)
        worker.start()
        try:
            assert started.wait(30)
            answer = stop_live_training(owner=asker) if asker else stop_live_training()
        finally:
            release.set()
            worker.join()
        assert stopped == [stops], (asker, answer)
        assert answer.startswith("Stop requested" if stops else "Not stopped: training a sentence encoder"), answer
    # another visitor refused while it runs is told to wait, not to stop it
    with run_owner("page-a"), live_training.exclusive_run("training a sentence encoder on mini-bert"):
        with pytest.raises(InputError) as refused:
            with live_training.exclusive_run("training a pair head on mini-bert"):
                pass
    assert "Wait for it to end, then try again" in str(refused.value)
