"""Choosing models by what they can do (``ModelSpec.can``): tabs never pick their defaults by key."""

from __future__ import annotations

from ..errors import InputError
from ..validation import check_int
from .catalogue import list_models
from .spec import ModelSpec
from .standins import opened_on


def _specs(models) -> list[ModelSpec]:
    """list_models() for None, else a list of ``ModelSpec`` (a key is not one: InputError)."""
    if models is None:
        return list(list_models())
    if isinstance(models, str) or not isinstance(models, (list, tuple)) \
            or not all(isinstance(m, ModelSpec) for m in models):
        raise InputError("models must be a list of ModelSpec, as list_models() gives them (or None).")
    return list(models)


def default_selection(models: tuple[ModelSpec, ...] | None = None, capability: str = "mlm",
                      published_limit: int = 3) -> list[str]:
    """The models a side-by-side view opens with: the published checkpoints that can run here
    (online), the first of each family and at most ``published_limit`` of them, else the mini
    zoo (offline), else whatever can run; all with ``capability`` (one of ``CAPABILITIES``).
    Every published checkpoint at once would load gigabytes on a visitor's first look (bert-large
    alone is 1.3 GB); the visitor ticks more. models: specs as ``list_models`` gives them (None:
    list_models()); published_limit: a whole number from 1."""
    models = _specs(models)
    published_limit = check_int(published_limit, "published_limit", 1, 1000)
    usable = [m for m in models if m.available and m.can(capability)]
    usable = [m for m in usable if not m.stand_in] if not opened_on(models) else usable
    first_of_family = {}
    for m in usable:
        if not m.embedded:
            first_of_family.setdefault(m.family, m.key)
    if first_of_family:
        return list(first_of_family.values())[:published_limit]
    return [m.key for m in usable if m.miniature] or [m.key for m in usable]


def first_capable(models: tuple[ModelSpec, ...] | None = None, capability: str = "mlm") -> str | None:
    """The model a one-model view opens with: the default MLM if it qualifies, else the
    first available model with ``capability`` (published first, then embedded). models: as
    ``default_selection``'s."""
    models = _specs(models)
    usable = [m for m in models if m.available and m.can(capability)]
    default = [m.key for m in usable if m.default and capability != "embeddings"]
    if default:
        return default[0]
    ranked = sorted(usable, key=lambda m: (m.stand_in and not opened_on(models), m.embedded, m.miniature))
    return ranked[0].key if ranked else None
