"""Guess-first rounds: a class guesses the blank, then sees its answers beside the model's.

    ticket = open_round("The capital of France is [MASK].")      # ticket.code: "K7MXQA"
    submit_guess(ticket.code, "Paris", student="a1b2c3d4e5")    # one guess per student
    results = round_results(ticket.code)                         # counts, the model's top-k, the loss
    close_round(ticket.code, ticket.teacher_token)

A round is a sentence with one [MASK] and a model with an MLM head. Students send one word
each; a second guess from the same student id replaces the first. ``round_results`` counts
the guesses as the model's vocabulary spells them, puts the model's top-k for the same blank
beside them, says where the class's favourite sits in the model's ranking, and gives the
class's average -log p under the model: the MLM loss of the class's own answers
(``models.classroom.scoring``: a guess of several pieces scores the product of its pieces; a
guess outside the vocabulary is counted and said so, with no probability).

Only the teacher's token (returned once, by ``open_round``; the store keeps its hash) closes a
round, reveals the model's answer or hides a guess from the screen. A closed, revealed or
expired round refuses guesses. Rounds live in a database (``models.classroom.store``) shared
by every process of the app; rounds opened more than a day ago are deleted.
"""

from __future__ import annotations

import functools
import secrets
import time
from dataclasses import dataclass

from ..errors import EncoderLabError, InputError
from ..mlm.fill_mask import fill_mask, mask_spans
from ..mlm.results import Prediction
from ..registry import catalogue
from ..runtime.loading import require_head
from ..validation import check_int, check_text
from . import store
from .checks import CODE_ALPHABET, CODE_LENGTH, check_code, check_guess, check_student, check_token, token_hash
from .scoring import GuessScore, score_guess, spelling

MAX_MINUTES = 24 * 60  # a round lasts at most a day: rounds older than that are deleted
KEEP_S = 24 * 3600.0
MAX_STUDENTS = 500  # students a round takes
MAX_ROUNDS = 2000  # rounds the database holds at once (every one is deleted a day after it opened)
MODEL_TOP_K = 10
MAX_ROUND_CHARS = 500  # the sentence on the projector and on every phone


@dataclass(frozen=True)
class RoundTicket:
    """What ``open_round`` gives the teacher: the code for the class, the token for the teacher."""

    code: str
    teacher_token: str  # secret: closes the round, reveals the model's answer, hides guesses
    text: str
    model_key: str
    expires_at: float  # seconds since the epoch


@dataclass(frozen=True)
class GuessReceipt:
    code: str
    guess: str  # as the model's vocabulary spells it (what the class's counts show)
    replaced: bool  # this student had sent a guess before: that one is replaced, not counted


@dataclass(frozen=True)
class RoundResults:
    """A round's state, the class's guesses and the model's answer for the same blank."""

    code: str
    text: str
    model_key: str
    state: str  # "open", "closed" or "expired"
    revealed: bool  # the teacher has shown the model's answer
    expires_at: float
    students: int  # students who sent a guess (each counted once)
    counts: dict[str, int]  # shown guess -> students, most frequent first (hidden guesses left out)
    hidden_students: int  # students whose guess the teacher hid from the screen
    guesses: tuple[GuessScore, ...]  # the shown guesses under the model, in ``counts`` order
    model_top: tuple[Prediction, ...]  # the model's top-k for the blank (fill-mask's)
    favourite: str | None  # the class's most frequent shown guess (ties: alphabetical)
    favourite_rank: int | None  # its place in the model's ranking; None outside the vocabulary
    mean_nll: float | None  # the class's average -log p (nats) over every scored student, hidden too
    scored_students: int  # students whose guess has a probability
    out_of_vocabulary: tuple[str, ...]  # shown guesses with no probability (counted, not scored)

    @property
    def accepting(self) -> bool:
        return self.state == "open"


def open_round(text: str, model_key: str | None = None, minutes: int = 60) -> RoundTicket:
    """Open a round on ``text`` (one [MASK]) for ``model_key`` (default: the app's default MLM
    model), taking guesses for ``minutes`` (1 to 1440)."""
    text = check_text(text, what="sentence", empty="type a sentence with one [MASK]")
    if len(text) > MAX_ROUND_CHARS:
        raise InputError(f"The sentence is {len(text)} characters long; a round's limit is {MAX_ROUND_CHARS}.")
    if len(mask_spans(text)) != 1:
        raise InputError("A round's sentence needs exactly one [MASK]: the blank the class guesses.")
    minutes = check_int(minutes, "minutes", 1, MAX_MINUTES)
    spec = catalogue.get_spec(model_key if model_key is not None else catalogue.default_model_key())
    require_head(spec, "mlm")
    fill_mask(spec, text, top_k=1)  # the model loads and reads the sentence before a class sees it
    now = time.time()
    store.delete_before(now - KEEP_S)
    if store.count_rounds() >= MAX_ROUNDS:
        raise EncoderLabError(f"This server holds {MAX_ROUNDS} rounds already; try again later.")
    token = secrets.token_urlsafe(24)
    for _ in range(20):
        code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
        if store.add_round(code, text, spec.key, token_hash(token), now, now + 60 * minutes):
            return RoundTicket(code, token, text, spec.key, now + 60 * minutes)
    raise EncoderLabError("No free round code was found; try again.")


def submit_guess(code: str, guess: str, student: str) -> GuessReceipt:
    """A student's one-word guess; a second one from the same ``student`` replaces the first."""
    code, guess, student = check_code(code), check_guess(guess), check_student(student)
    row = _round(code)
    state = _state(row)
    if state != "open":
        raise InputError(_refusal(state, row))
    spec = catalogue.get_spec(row["model_key"])
    spelled = spelling(spec, guess)
    replaced = store.put_guess(code, student, spelled, time.time(), MAX_STUDENTS)
    if replaced is None:
        raise InputError(f"Round {code} has its {MAX_STUDENTS} students already.")
    return GuessReceipt(code, spelled, replaced)


def round_results(code: str) -> RoundResults:
    """The round's counts beside the model's answer (see ``RoundResults``)."""
    code = check_code(code)
    row = _round(code)
    spec = catalogue.get_spec(row["model_key"])
    counts = sorted(store.guess_counts(code), key=lambda c: (-c[1], c[0]))
    hidden = store.hidden(code)
    scores = [score_guess(spec, row["text"], g, n) for g, n in counts]
    shown = [s for s in scores if s.guess not in hidden]
    scored = [s for s in scores if s.in_vocabulary]
    n_scored = sum(s.students for s in scored)
    favourite = shown[0] if shown else None
    return RoundResults(
        code=code, text=row["text"], model_key=spec.key, state=_state(row), revealed=bool(row["revealed"]),
        expires_at=float(row["expires"]), students=sum(n for _, n in counts),
        counts={s.guess: s.students for s in shown},
        hidden_students=sum(s.students for s in scores if s.guess in hidden), guesses=tuple(shown),
        model_top=_model_top(spec, row["text"]),
        favourite=favourite.guess if favourite else None, favourite_rank=favourite.rank if favourite else None,
        mean_nll=sum(s.nll * s.students for s in scored) / n_scored if n_scored else None,
        scored_students=n_scored, out_of_vocabulary=tuple(s.guess for s in shown if not s.in_vocabulary),
    )


@functools.lru_cache(maxsize=256)
def _model_top(spec, text: str) -> tuple[Prediction, ...]:
    """The model's top-k for a round's blank, once per process (every page of a class asks)."""
    return fill_mask(spec, text, top_k=MODEL_TOP_K).masks[0].predictions


def close_round(code: str, teacher_token: str) -> RoundResults:
    """Stop taking guesses (only the token that opened the round); the results stay readable."""
    return _as_teacher(code, teacher_token, closed=True)


def reveal_round(code: str, teacher_token: str) -> RoundResults:
    """Show the model's answer on every student's page; guesses stop (the answer is out)."""
    return _as_teacher(code, teacher_token, closed=True, revealed=True)


def hide_guess(code: str, teacher_token: str, guess: str) -> RoundResults:
    """Take a guess (as ``counts`` spells it) off the screen: its students still count."""
    code = check_code(code)
    check_token(teacher_token, _round(code)["token_hash"])
    store.hide(code, check_guess(guess))
    return round_results(code)


def _as_teacher(code: str, teacher_token: str, **state) -> RoundResults:
    code = check_code(code)
    check_token(teacher_token, _round(code)["token_hash"])
    store.set_round(code, **state)
    return round_results(code)


def _round(code: str) -> dict:
    row = store.get_round(code)
    if row is None:
        raise InputError(f"No round has the code {code}: check the code on the teacher's screen (rounds are "
                         "deleted a day after they open).")
    return row


def _state(row: dict) -> str:
    if row["closed"]:
        return "closed"
    return "expired" if time.time() >= row["expires"] else "open"


def _refusal(state: str, row: dict) -> str:
    when = time.strftime("%H:%M UTC", time.gmtime(row["expires"]))
    if state == "expired":
        return f"Round {row['code']} ended at {when}: it takes no more guesses."
    return f"Round {row['code']} is closed: the teacher has stopped the guesses."
