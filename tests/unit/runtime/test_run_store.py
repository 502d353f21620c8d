"""Runs kept on disk (models/runtime/run_store.py): a restored run behaves as the run it kept.

Each test trains a real, very short run through ``kept_run`` into a folder of its own, then
forgets the file's in-process traces and calls again: the second call must restore (no
training), register the trained copy again under a new id, and answer exactly as the
original copy does. What must not be kept (another setting, a run cut short, keeping off, an
unreadable file) trains again.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from models import (answer_span, classify, classify_pair, distill, embed, kept_run, load_model, train_classifier,
                    train_pair_classifier, train_sentence_encoder, train_span_head)
from models.runtime import run_store
from models import get_spec

KEY = "mini-bert"  # the Lessons' live-training model: a small encoder with an MLM head


@pytest.fixture
def runs(tmp_path, monkeypatch):
    monkeypatch.setenv("ENCODER_LAB_RUNS_DIR", str(tmp_path))
    monkeypatch.setenv("ENCODER_LAB_KEEP_RUNS", "1")
    run_store.RESTORED.clear()
    return tmp_path


def _counting(trainer):
    calls = []

    def counted(*args, **kwargs):
        calls.append(args)
        return trainer(*args, **kwargs)

    counted.__qualname__, counted.__module__ = trainer.__qualname__, trainer.__module__
    return counted, calls


def test_span_head_restored_answers_as_the_trained_copy(runs):
    trainer, calls = _counting(train_span_head)
    first = kept_run(trainer, KEY, steps=3, seed=0, learning_rate=1e-3)
    assert len(calls) == 1 and len(list(runs.glob("train_span_head-*.pt"))) == 1
    again = kept_run(trainer, KEY, steps=3, seed=0, learning_rate=1e-3)
    assert len(calls) == 1, "the kept run was trained again"
    assert run_store.RESTORED == ["train_span_head"]
    assert again.head_id != first.head_id  # registered again, as a head of its own
    assert again.train_loss == first.train_loss and again.scores == first.scores
    assert "Kept on disk" in again.note and "Kept on disk" not in first.note
    question, context = "What is the capital of Peru?", "Lima is the capital of Peru, on the Pacific coast."
    a, b = answer_span(first.head_id, question, context), answer_span(again.head_id, question, context)
    assert (a.answer, a.start, a.end) == (b.answer, b.start, b.end)
    np.testing.assert_allclose(b.start_probabilities, a.start_probabilities, rtol=0, atol=1e-6)
    np.testing.assert_allclose(b.end_probabilities, a.end_probabilities, rtol=0, atol=1e-6)


def test_probes_restored_read_the_shared_encoder_and_answer_as_before(runs):
    """A frozen probe keeps only its head: restored, it reads the cached encoder itself."""
    trainer, calls = _counting(train_classifier)
    first = kept_run(trainer, KEY, "fiction-speech", pooling="mean", freeze=True, epochs=2)
    again = kept_run(trainer, KEY, "fiction-speech", pooling="mean", freeze=True, epochs=2)
    assert len(calls) == 1 and again.head_id != first.head_id
    assert again.validation_accuracy == first.validation_accuracy
    text = "The senator rose to address the chamber on the budget."
    np.testing.assert_allclose(classify(again.head_id, text).probabilities, classify(first.head_id, text).probabilities,
                               rtol=0, atol=1e-6)
    pair_trainer, pair_calls = _counting(train_pair_classifier)
    first = kept_run(pair_trainer, KEY, "definition-match", freeze=True, epochs=2, train_size=200)
    again = kept_run(pair_trainer, KEY, "definition-match", freeze=True, epochs=2, train_size=200)
    assert len(pair_calls) == 1 and again.head_id != first.head_id
    a, b = "dog", "a domesticated carnivorous mammal that barks"
    np.testing.assert_allclose(classify_pair(again.head_id, a, b).probabilities,
                               classify_pair(first.head_id, a, b).probabilities, rtol=0, atol=1e-6)
    (path,) = runs.glob("train_pair_classifier-*.pt")
    assert path.stat().st_size < 200_000  # the head and how it reads, not a copy of the encoder
    from models.tasks import pair_heads

    assert pair_heads._HEADS.get(again.head_id)[0].body is load_model(get_spec(KEY), head="base").model


def test_a_fine_tuned_copy_restored_answers_as_before(runs):
    trainer, calls = _counting(train_classifier)
    first = kept_run(trainer, KEY, "fiction-speech", freeze=False, epochs=1, train_size=40)
    again = kept_run(trainer, KEY, "fiction-speech", freeze=False, epochs=1, train_size=40)
    assert len(calls) == 1 and again.head_id != first.head_id
    text = "The senator rose to address the chamber on the budget."
    np.testing.assert_allclose(classify(again.head_id, text).probabilities, classify(first.head_id, text).probabilities,
                               rtol=0, atol=1e-6)
    from models.tasks import classifier

    assert classifier._trained(again.head_id).model.body is not load_model(get_spec(KEY), head="base").model  # its own copy


def test_other_settings_train_again(runs):
    trainer, calls = _counting(train_span_head)
    kept_run(trainer, KEY, steps=2, seed=0, learning_rate=1e-3)
    kept_run(trainer, KEY, steps=2, seed=1, learning_rate=1e-3)
    assert len(calls) == 2 and len(list(runs.glob("*.pt"))) == 2


def test_sentence_encoder_restored_embeds_as_the_trained_copy(runs):
    trainer, calls = _counting(train_sentence_encoder)
    first = kept_run(trainer, KEY, steps=2, seed=0)
    again = kept_run(trainer, KEY, steps=2, seed=0)
    assert len(calls) == 1 and again.encoder_key != first.encoder_key
    assert again.after == first.after and again.train_loss == first.train_loss
    sentences = ["The bank raised its interest rates.", "We sat on the river bank.", "A cat slept."]
    np.testing.assert_allclose(embed(again.encoder_key, sentences), embed(first.encoder_key, sentences),
                               rtol=0, atol=1e-6)


def test_distillation_restored_is_the_same_result(runs):
    trainer, calls = _counting(distill)
    first = kept_run(trainer, KEY, "1x64", steps=2, seed=0)
    again = kept_run(trainer, KEY, "1x64", steps=2, seed=0)
    assert len(calls) == 1
    assert again.distilled == first.distilled and again.mlm_only == first.mlm_only
    assert again.loss_gain == first.loss_gain


def test_keeping_off_and_unreadable_files_train_again(runs, monkeypatch, caplog):
    trainer, calls = _counting(distill)
    monkeypatch.setenv("ENCODER_LAB_KEEP_RUNS", "0")
    kept_run(trainer, KEY, "1x64", steps=1, seed=0)
    assert len(calls) == 1 and not list(runs.glob("*.pt"))
    monkeypatch.setenv("ENCODER_LAB_KEEP_RUNS", "1")
    kept_run(trainer, KEY, "1x64", steps=1, seed=0)
    (path,) = runs.glob("*.pt")
    path.write_bytes(b"not a kept run")
    with caplog.at_level("INFO", logger="encoder_lab"):
        kept_run(trainer, KEY, "1x64", steps=1, seed=0)
    assert len(calls) == 3 and "not restored" in caplog.text
    assert path.stat().st_size > 100  # written again, readable
    kept_run(trainer, KEY, "1x64", steps=1, seed=0)
    assert len(calls) == 3


@dataclass(frozen=True)
class _Stopped:
    stopped: str
    note: str


def test_a_run_cut_short_is_not_kept(runs):
    run_store.register_kind(_Stopped, lambda result: None, lambda result, _payload, _spec: result)
    calls = []

    def trainer(model_key):
        calls.append(model_key)
        return _Stopped(stopped="stopped after 1 s (the time limit)", note="")

    kept_run(trainer, KEY)
    kept_run(trainer, KEY)
    assert len(calls) == 2 and not list(runs.glob("*.pt"))


def test_only_the_newest_kept_runs_stay(runs):
    import os

    for number in range(5):
        path = runs / f"train_span_head-{number:032d}.pt"
        path.write_bytes(b"x")
        os.utime(path, (1_000_000 + number, 1_000_000 + number))
    run_store._prune(runs, keep=3)
    assert sorted(p.name[-6:-3] for p in runs.glob("*.pt")) == ["002", "003", "004"]
