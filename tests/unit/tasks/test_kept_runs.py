"""Trained heads kept per visitor within the server's memory budget, through the public
functions: a visitor's newest head stays while others' older ones go, and a dropped head
says so when it is used."""

from __future__ import annotations

import pytest

from helpers import ENCODER_KEY
from models import InputError, classify, run_owner, train_classifier
from models.runtime import memory
from models.tasks import classifier

TASK = "fiction-speech"
TEXT = 'She said, "Come in."'


def _train(visitor: str, seed: int):
    with run_owner(visitor):
        return train_classifier(ENCODER_KEY, TASK, pooling="mean", epochs=1, train_size=8, seed=seed)


def test_each_visitors_newest_head_stays_and_a_dropped_one_says_so(monkeypatch):
    first = _train("ann", 1)  # the encoder is loaded (and counted in the server's budget) by now
    sizes = {e.key: e.nbytes for e in classifier._TRAINED.entries()}
    head = sizes[first.head_id]
    assert 0 < head < 10**6  # a probe counts its head, not the cached encoder it sits on
    # a budget of two and a half heads of its own, holding the trained heads only
    budget = memory.MemoryBudget(int(2.5 * head), "a test's")
    budget.register(classifier._TRAINED)
    monkeypatch.setattr(memory, "MEMORY", budget)
    bob = _train("bob", 2)
    newest = _train("ann", 3)  # three heads: ann's older one goes, bob's only one stays
    for kept in (bob, newest):
        assert classify(kept.head_id, TEXT).predicted[0] in kept.labels
    with pytest.raises(InputError, match="was dropped to keep the server within its memory budget.*Train the head"):
        classify(first.head_id, TEXT)
    assert budget.report().dropped >= 1
