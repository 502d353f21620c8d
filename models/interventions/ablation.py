"""Knock out attention heads and watch the blank: ``ablate_heads`` and ``head_importance``.

Knocking out head ``h`` of layer ``l`` sets its slice of the input to that layer's
attention output projection W_O (the heads side by side, ``z``) to 0 ("zero"), or to its
mean over the text's positions ("mean"), in that layer only; the rest of the pass runs as
the model runs it (``hooks.Interventions``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..errors import InputError
from ..validation import check_int
from ..registry import catalogue
from .common import Guess, Request, Target, no_edits, prepare, run_rows, target_for, top_guesses
from .hooks import Interventions, knock_out

MODES = ("zero", "mean")


@dataclass(frozen=True)
class MaskAblation:
    """One mask's top guesses with every head in place and with the chosen heads knocked out."""

    position: int
    before: tuple[Guess, ...]
    after: tuple[Guess, ...]


@dataclass(frozen=True)
class AblationResult:
    """``ablate_heads``' result."""

    model_key: str
    family: str
    text: str
    tokens: tuple[str, ...]
    heads: tuple[tuple[int, int], ...]  # (layer, head), sorted, 0-based
    mode: str
    num_layers: int
    num_heads: int
    masks: tuple[MaskAblation, ...]
    target: Target | None
    p_target_before: float | None  # at the first mask
    p_target_after: float | None


@dataclass(frozen=True, eq=False)
class HeadImportance:
    """``head_importance``' result: what each head alone is worth to the target."""

    model_key: str
    family: str
    text: str
    tokens: tuple[str, ...]
    target: Target
    p_target: float  # every head in place
    delta_log_p: np.ndarray  # (layers, heads): log p(target) without that head minus with it
    p_without: np.ndarray  # (layers, heads): p(target) with that head knocked out
    num_layers: int
    num_heads: int


def check_heads(heads, n_layers: int, n_heads: int) -> tuple[tuple[int, int], ...]:
    """(layer, head) pairs in range, sorted, without repeats; an ``InputError`` naming ``heads``."""
    if heads is None:
        return ()
    if isinstance(heads, (str, bytes)) or not hasattr(heads, "__iter__"):
        raise InputError("heads must be a list of (layer, head) pairs, e.g. [(0, 3), (2, 1)].")
    pairs = set()
    for i, pair in enumerate(heads):
        if isinstance(pair, (str, bytes)) or not hasattr(pair, "__len__") or len(pair) != 2:
            raise InputError(f"heads[{i}] must be a (layer, head) pair, not {pair!r}.")
        pairs.add((check_int(pair[0], f"heads[{i}]: the layer", 0, n_layers - 1),
                   check_int(pair[1], f"heads[{i}]: the head", 0, n_heads - 1)))
    return tuple(sorted(pairs))


def _knockout_hooks(request: Request, rows_heads: dict[int, list[tuple[int, int]]], mode: str = "zero"):
    """Interventions knocking out, at each layer, the (batch row, head) pairs listed for it."""
    hooks = Interventions(request.family, request.loaded.model)
    for layer, pairs in rows_heads.items():
        hooks.at("z", layer, knock_out(pairs, request.num_heads, mode))
    return hooks


def ablate_heads(model_key: str, text: str, heads, target: str | None = None, mode: str = "zero") -> AblationResult:
    """The fill-mask answer with the ``heads`` ((layer, head) pairs, 0-based) knocked out.

    mode: "zero" (the head's slice of W_O's input set to 0) or "mean" (set to its mean over
    the text's positions). Each mask's top 5 before and after; for a ``target`` word, its
    probability at the first mask before and after (a word of several pieces: its first
    piece). An empty ``heads`` leaves the answer bit-identical.
    """
    spec = catalogue.get_spec(model_key)
    if mode not in MODES:
        raise InputError(f"mode must be one of {', '.join(MODES)}; got {mode!r}.")
    request = prepare(spec, text)
    pairs = check_heads(heads, request.num_layers, request.num_heads)
    positions = request.mask_positions
    by_layer: dict[int, list[tuple[int, int]]] = {}
    for layer, head in pairs:
        by_layer.setdefault(layer, []).append((0, head))
    before = run_rows(request, [None], no_edits(request), positions)[0].softmax(-1)  # (M, V)
    after = run_rows(request, [None], lambda _: _knockout_hooks(request, by_layer, mode), positions)[0].softmax(-1)
    chosen = None if target is None or not str(target).strip() else target_for(request, target)
    masks = tuple(MaskAblation(p, top_guesses(request, b), top_guesses(request, a))
                  for p, b, a in zip(positions, before, after))
    return AblationResult(
        model_key=spec.key, family=request.family, text=request.text, tokens=request.tokens, heads=pairs,
        mode=mode, num_layers=request.num_layers, num_heads=request.num_heads, masks=masks, target=chosen,
        p_target_before=None if chosen is None else float(before[0, chosen.token_id]),
        p_target_after=None if chosen is None else float(after[0, chosen.token_id]),
    )


def head_importance(model_key: str, text: str, target: str | None = None) -> HeadImportance:
    """A layers x heads grid of the change in log p(target) at the first mask when that head
    alone is knocked out (zeroed); target: the top guess when not given. One batch row per
    head (and one with every head in place), a few batched forwards in all."""
    spec = catalogue.get_spec(model_key)
    request = prepare(spec, text)
    specs = [None] + [(l, h) for l in range(request.num_layers) for h in range(request.num_heads)]

    def hooks_for(part):
        by_layer: dict[int, list[tuple[int, int]]] = {}
        for row, pair in enumerate(part):
            if pair is not None:
                by_layer.setdefault(pair[0], []).append((row, pair[1]))
        return _knockout_hooks(request, by_layer)

    log_p = torch.log_softmax(run_rows(request, specs, hooks_for)[:, 0], dim=-1)  # (1 + L·H, V)
    chosen = target_for(request, target, int(log_p[0].argmax()))
    column = log_p[:, chosen.token_id]
    grid = (column[1:] - column[0]).reshape(request.num_layers, request.num_heads).numpy()
    without = column[1:].exp().reshape(request.num_layers, request.num_heads).numpy()
    for array in (grid, without):
        array.flags.writeable = False
    return HeadImportance(spec.key, request.family, request.text, request.tokens, chosen, float(column[0].exp()),
                          grid, without, request.num_layers, request.num_heads)
