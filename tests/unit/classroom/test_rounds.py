"""Class rounds on SQLite and on PostgreSQL: counts, the model's answer, the loss, every refusal.

The references are transformers' own: the fill-mask pipeline on a copy of the model for the
top-k and the one-piece probabilities, the masked-LM model's forward on the blank written as
one mask per piece for a guess of several pieces, the tokenizer for the spellings.
"""

from __future__ import annotations

import copy
import math
import time

import pytest
import torch

from models import (
    InputError,
    close_round,
    hide_guess,
    open_round,
    reveal_round,
    round_results,
    submit_guess,
)
from models.classroom import store

TEXT = "The capital of France is [MASK]."


@pytest.fixture(scope="module")
def reference(mlm_loaded):
    """(pipeline, model): transformers' fill-mask pipeline and a copy of the model it runs."""
    from transformers import pipeline

    model = copy.deepcopy(mlm_loaded.model)
    return pipeline("fill-mask", model=model, tokenizer=mlm_loaded.tokenizer, device=mlm_loaded.device), model


def reference_log_p(model, tokenizer, word: str) -> float:
    """log p(word) in the blank: the sum over its pieces, the blank as one mask per piece."""
    pieces = tokenizer.tokenize(" " + word)
    text = TEXT.replace("[MASK]", tokenizer.mask_token * len(pieces))
    inputs = tokenizer(text, return_tensors="pt").to(model.device)
    with torch.no_grad():
        logits = model(**inputs).logits[0]
    at = (inputs["input_ids"][0] == tokenizer.mask_token_id).nonzero().flatten()
    logp = logits[at].float().log_softmax(-1)
    return float(sum(logp[i, t] for i, t in enumerate(tokenizer.convert_tokens_to_ids(pieces))))


def test_a_round_counts_each_student_once_beside_the_models_answer(rounds_db, mlm_key, mlm_loaded, reference):
    pipe, model = reference
    tokenizer = mlm_loaded.tokenizer
    ticket = open_round(TEXT, mlm_key, minutes=5)
    assert len(ticket.code) == 6 and ticket.teacher_token and ticket.model_key == mlm_key
    guesses = [("s-first-01", "Lyon"), ("s-second-2", "PARIS"), ("s-third-03", "paris"), ("s-fourth-4", "tardigrade"),
               ("s-fifth-05", "\N{GRINNING FACE}"), ("s-first-01", "Paris")]  # the first student changes their mind
    receipts = [submit_guess(ticket.code.lower(), guess, student) for student, guess in guesses]
    assert [r.replaced for r in receipts] == [False] * 5 + [True]
    results = round_results(ticket.code)

    spelled = {g: tokenizer.convert_tokens_to_string(tokenizer.tokenize(g)) for g in ("PARIS", "tardigrade")}
    assert results.students == 5
    assert results.counts == {spelled["PARIS"]: 3, spelled["tardigrade"]: 1, "\N{GRINNING FACE}": 1}
    assert results.favourite == "paris" and results.state == "open" and not results.revealed
    assert results.out_of_vocabulary == ("\N{GRINNING FACE}",)  # counted, said so, not scored
    assert results.scored_students == 4
    assert len(tokenizer.tokenize("tardigrade")) > 1  # a guess of several pieces

    expected = pipe(TEXT, top_k=10)
    assert [p.token_id for p in results.model_top] == [e["token"] for e in expected]
    assert [p.score for p in results.model_top] == pytest.approx([e["score"] for e in expected], abs=1e-5)
    everything = pipe(TEXT, top_k=tokenizer.vocab_size)
    paris = next(e for e in everything if e["token_str"] == "paris")
    assert results.favourite_rank == everything.index(paris) + 1

    log_p = {w: reference_log_p(model, tokenizer, w) for w in ("paris", "tardigrade")}
    assert log_p["paris"] == pytest.approx(math.log(paris["score"]), abs=1e-4)
    assert results.mean_nll == pytest.approx(-(3 * log_p["paris"] + log_p["tardigrade"]) / 4, rel=1e-3)
    piece = next(g for g in results.guesses if g.guess == "tardigrade")
    assert piece.pieces == tuple(tokenizer.tokenize("tardigrade"))
    assert math.log(piece.probability) == pytest.approx(log_p["tardigrade"], abs=1e-3)

    with pytest.raises(InputError, match="Wrong teacher token"):
        close_round(ticket.code, "not-the-token")
    closed = close_round(ticket.code, ticket.teacher_token)
    assert closed.state == "closed" and closed.counts == results.counts
    with pytest.raises(InputError, match="is closed"):
        submit_guess(ticket.code, "rome", "s-sixth-06")
    assert round_results(ticket.code).students == 5


@pytest.mark.parametrize("guess, message", [
    ("", "empty"), ("   ", "empty"), ("two words", "more than one word"), ("x" * 41, "41 characters"),
    ("<b>paris</b>", "markup"), ("&lt;script&gt;", "markup"), ("pa\x07ris", "control"), (None, "must be a string"),
])
def test_a_bad_guess_is_a_clear_error_and_nothing_is_stored(mlm_key, guess, message):
    ticket = open_round(TEXT, mlm_key)
    with pytest.raises(InputError, match=message):
        submit_guess(ticket.code, guess, "student-01")
    assert round_results(ticket.code).students == 0


def test_wrong_codes_students_and_tokens_are_clear_errors(mlm_key):
    ticket = open_round(TEXT, mlm_key)
    wrong = "AAAAAA" if ticket.code != "AAAAAA" else "CCCCCC"
    for code, message in [("", "empty"), ("ABC", "not a code"), ("O0O0O0", "not a code"), (wrong, "No round"),
                          ("<img src=x>", "not a code")]:
        with pytest.raises(InputError, match=message) as caught:
            submit_guess(code, "paris", "student-01")
        assert "<" not in str(caught.value)  # a wrong code is never repeated unless it is plain
    for student in ("", "short", "a b c d e f g h", "<script>alert(1)</script>"):
        with pytest.raises(InputError, match="student id"):
            submit_guess(ticket.code, "paris", student)
    for act in (lambda t: close_round(ticket.code, t), lambda t: reveal_round(ticket.code, t),
                lambda t: hide_guess(ticket.code, t, "paris")):
        with pytest.raises(InputError, match="Wrong teacher token"):
            act("")
    results = round_results(ticket.code)
    assert results.students == 0 and results.state == "open"


@pytest.mark.parametrize("text, message", [("No blank here.", "no mask"), ("[MASK] and [MASK].", "exactly one"),
                                           ("", "empty"), ("x [MASK] " + "y" * 600, "limit")])
def test_a_round_needs_a_sentence_with_one_blank(mlm_key, text, message):
    with pytest.raises(InputError, match=message):
        open_round(text, mlm_key)


def test_minutes_out_of_range_and_a_model_without_a_guess_are_refused(mlm_key, encoder_key):
    for minutes in (0, 1441, 2.5, True):
        with pytest.raises(InputError, match="minutes"):
            open_round(TEXT, mlm_key, minutes=minutes)
    with pytest.raises(Exception, match="MLM|mlm|masked"):
        open_round(TEXT, encoder_key)


def test_hidden_guesses_leave_the_screen_but_still_count(mlm_key):
    ticket = open_round(TEXT, mlm_key)
    for i, guess in enumerate(["paris", "paris", "rubbish"]):
        submit_guess(ticket.code, guess, f"student-{i:02d}")
    before = round_results(ticket.code)
    after = hide_guess(ticket.code, ticket.teacher_token, "rubbish")
    assert after.counts == {"paris": 2} and after.hidden_students == 1 and after.students == 3
    assert after.mean_nll == pytest.approx(before.mean_nll)  # the class's loss is everyone's


def test_reveal_shows_the_answer_and_stops_the_guesses(mlm_key):
    ticket = open_round(TEXT, mlm_key)
    submit_guess(ticket.code, "paris", "student-01")
    shown = reveal_round(ticket.code, ticket.teacher_token)
    assert shown.revealed and shown.state == "closed"
    with pytest.raises(InputError, match="closed"):
        submit_guess(ticket.code, "rome", "student-02")


def test_an_expired_round_refuses_guesses_and_old_rounds_are_deleted(rounds_db, mlm_key):
    now = time.time()
    assert store.add_round("CCCCCC", TEXT, mlm_key, "x" * 64, now - 120, now - 60)  # ended a minute ago
    assert store.add_round("DDDDDD", TEXT, mlm_key, "x" * 64, now - 2 * 86400, now - 86400)  # opened 2 days ago
    with pytest.raises(InputError, match="ended at"):
        submit_guess("CCCCCC", "paris", "student-01")
    assert round_results("CCCCCC").state == "expired"
    open_round(TEXT, mlm_key)  # each opening deletes the rounds opened over a day ago
    with pytest.raises(InputError, match="No round has the code DDDDDD"):
        round_results("DDDDDD")
    assert round_results("CCCCCC").students == 0
