"""The checks of a round's inputs: a code, a guess, a student id, a teacher's token."""

from __future__ import annotations

import hashlib
import hmac
import re

from ..errors import InputError
from ..validation import check_text

# Round codes: 6 characters a class can read off a projector and type, none a look-alike of
# another (no 0/O, 1/I/L, 2/Z, 5/S, 8/B).
CODE_ALPHABET = "ACDEFGHJKMNPQRTUVWXY34679"
CODE_LENGTH = 6
MAX_GUESS_CHARS = 40
_CODE = re.compile(f"[{CODE_ALPHABET}]{{{CODE_LENGTH}}}")
_STUDENT = re.compile(r"[A-Za-z0-9_-]{8,64}")
_MARKUP = re.compile(r"[<>]|&#?\w+;|javascript:", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_ECHO = re.compile(r"[A-Za-z0-9]{1,12}")  # a wrong code is repeated in a message only when it is this plain


def check_code(code) -> str:
    """A round code in capitals (a class may type it in lower case, with spaces around it)."""
    if not isinstance(code, str) or not code.strip():
        raise InputError("The round code is empty: type the 6-character code on the teacher's screen.")
    cleaned = code.strip().upper()
    if not _CODE.fullmatch(cleaned):
        shown = f" {cleaned!r}" if _ECHO.fullmatch(cleaned) else ""
        raise InputError(f"The round code{shown} is not a code this app gives: a code is {CODE_LENGTH} "
                         f"characters from {CODE_ALPHABET}. Check the code on the teacher's screen.")
    return cleaned


def check_guess(guess) -> str:
    """One word of at most ``MAX_GUESS_CHARS`` characters, no markup, spaces around it removed."""
    guess = check_text(guess, what="guess", empty="type one word").strip()
    if len(guess) > MAX_GUESS_CHARS:
        raise InputError(f"The guess is {len(guess)} characters long; the limit is {MAX_GUESS_CHARS}. Type one word.")
    if re.search(r"\s", guess):
        raise InputError("The guess is more than one word: type a single word, with no spaces.")
    if _MARKUP.search(guess) or _CONTROL.search(guess):
        raise InputError("The guess contains markup or control characters (such as < or >): type a plain word.")
    return guess


def check_student(student) -> str:
    if not isinstance(student, str) or not _STUDENT.fullmatch(student):
        raise InputError("The student id must be 8 to 64 letters, digits, '-' or '_' (the page makes one "
                         "at random and keeps it for the round).")
    return student


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def check_token(token, stored_hash: str) -> None:
    """The teacher's token of a round, or an ``InputError``."""
    if not isinstance(token, str) or not token or not hmac.compare_digest(token_hash(token), stored_hash):
        raise InputError("Wrong teacher token: only the page that opened the round can close, reveal or "
                         "hide its guesses.")
