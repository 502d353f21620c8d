"""Input checks shared by the core's public functions: one place, one wording."""

from __future__ import annotations

import numpy as np

from .errors import InputError

# The longest text the core accepts, in characters, before any tokenisation work.
MAX_TEXT_CHARS = 20_000


def check_text(text, what: str = "text", empty: str = "type a sentence first") -> str:
    """A non-empty string of at most MAX_TEXT_CHARS characters, or an InputError (``empty``:
    what the message of an empty one asks the user to do)."""
    if not isinstance(text, str):
        raise InputError(f"The {what} must be a string, not {type(text).__name__}.")
    if not text.strip():
        raise InputError(f"The {what} is empty: {empty}.")
    if len(text) > MAX_TEXT_CHARS:
        raise InputError(
            f"The {what} is {len(text):,} characters long; the limit is {MAX_TEXT_CHARS:,}. "
            "Shorten it."
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone UTF-16 surrogate, e.g. "\ud800" sent as JSON
        raise InputError(
            f"The {what} contains an invalid character at position {exc.start} "
            f"(a lone surrogate, U+{ord(text[exc.start]):04X}); remove it."
        ) from None
    return text


def check_texts(text, text_pair=None) -> tuple[str, str | None]:
    """A checked text and an optional second text (an empty second box means "no pair")."""
    text = check_text(text)
    if isinstance(text_pair, str) and not text_pair.strip():
        text_pair = None
    if text_pair is not None:
        text_pair = check_text(text_pair, what="second text")
    return text, text_pair


def check_int(value, name: str, low: int, high: int) -> int:
    """A whole number in [low, high], or an InputError that names the range.

    A float with no fraction (3.0, what a UI number box sends) and a NumPy integer are
    accepted; a bool, a fraction, NaN or infinity are not."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not low <= value <= high:
        raise InputError(f"{name} must be a whole number from {low} to {high}; got {value!r}.")
    return int(value)


def as_real(value) -> float:
    """``value`` as a float when it is a real number (a NumPy one too), else NaN, which every
    range check refuses: True is not 1.0 and "0.5" is not 0.5."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        return float("nan")
    return float(value)


def check_array(value, what: str, dtype=np.float64) -> np.ndarray:
    """``value`` (an array, nested lists) as a NumPy array of finite numbers, or an InputError
    naming ``what``: text, None, ragged lists, NaN or infinity are not numbers to compute on."""
    try:
        array = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError):
        raise InputError(f"{what} must be an array of numbers; got {type(value).__name__}.") from None
    if not np.isfinite(array).all():
        raise InputError(f"{what} holds NaN or infinite values.")
    return array


def check_bool(value, name: str) -> bool:
    """True or False (a NumPy bool too), or an InputError: a string such as "False", a number,
    NaN or None is not read by its truthiness."""
    if not isinstance(value, (bool, np.bool_)):
        raise InputError(f"{name} must be True or False; got {value!r}.")
    return bool(value)


def check_limit(limit, count: int) -> int:
    """``limit`` (the first N items of a set of ``count``) as a whole number from 1 to count;
    None means all of them."""
    return count if limit is None else check_int(limit, "limit", 1, count)
