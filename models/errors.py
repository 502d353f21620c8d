"""The project's one error type and its specific kinds.

Every error raised on bad input is an ``EncoderLabError`` (a ``ValueError``), with a
message a student can act on. The UI shows the message as it is; a notebook user can
catch ``EncoderLabError`` once for all of them.
"""

from __future__ import annotations


class EncoderLabError(ValueError):
    """Bad input or an unusable model, explained in plain words."""


class UnknownModelError(EncoderLabError):
    """The model key is not in the registry."""


class ModelUnavailableError(EncoderLabError):
    """The model is in the registry but cannot be loaded on this machine now."""


class CapabilityError(EncoderLabError):
    """The model lacks what the task needs (e.g. fill-mask on a model with no MLM head)."""


class InputError(EncoderLabError):
    """The text or a parameter is not acceptable (empty, no mask, too long, out of range)."""
