"""Choosing models by what they can do (``ModelSpec.can``): tabs never pick their defaults by key."""

from __future__ import annotations

from .catalogue import list_models
from .spec import ModelSpec

def default_selection(models: tuple[ModelSpec, ...] | None = None, capability: str = "mlm",
                      published_limit: int | None = None) -> list[str]:
    """The models a side-by-side view opens with: the published checkpoints that can run here
    (online; the first ``published_limit`` of them), else the mini zoo (offline), else
    whatever can run; all with ``capability``."""
    models = list_models() if models is None else models
    usable = [m for m in models if m.available and m.can(capability)]
    published = [m.key for m in usable if not m.embedded]
    if published:
        return published[:published_limit]
    return [m.key for m in usable if m.miniature] or [m.key for m in usable]


def first_capable(models: tuple[ModelSpec, ...] | None = None, capability: str = "mlm") -> str | None:
    """The model a one-model view opens with: the default MLM if it qualifies, else the
    first available model with ``capability`` (published first, then embedded)."""
    models = list_models() if models is None else models
    usable = [m for m in models if m.available and m.can(capability)]
    default = [m.key for m in usable if m.default and capability != "embeddings"]
    if default:
        return default[0]
    ranked = sorted(usable, key=lambda m: (m.embedded, m.miniature))
    return ranked[0].key if ranked else None
