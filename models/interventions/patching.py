"""Causal tracing for encoders: ``patch_activations``.

Two texts of the same token length: a clean one ("The capital of France is [MASK].") and a
corrupt one ("The capital of Italy is [MASK]."). The clean run's output of layer ``l`` at
one position is copied into the corrupt run (``hooks.copy_in``) and the rest of the
corrupt run goes on as the model runs it; p(target) at the first mask says how much of the
clean answer that one state carries. One batch row per (layer, position).

Costs: layers x positions rows. Texts longer than ``MAX_PATCH_POSITIONS`` tokens are
patched at that many positions: those where the two texts differ and the mask first, then
the others from the left; the result lists them and says so.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..errors import InputError
from ..registry import catalogue
from .common import Request, Target, no_edits, prepare, run_rows, target_for
from .hooks import Interventions, copy_in, record

MAX_PATCH_POSITIONS = 32


@dataclass(frozen=True, eq=False)
class PatchResult:
    """``patch_activations``' result."""

    model_key: str
    family: str
    clean_text: str
    corrupt_text: str
    clean_tokens: tuple[str, ...]
    corrupt_tokens: tuple[str, ...]
    position: int  # the first mask's token position, where p(target) is read
    target: Target
    p_clean: float
    p_corrupt: float
    positions: tuple[int, ...]  # the patched token positions (the grid's columns), in order
    p_patched: np.ndarray  # (layers, len(positions)): p(target) with that one state from the clean run
    capped: bool  # True when the text is longer than MAX_PATCH_POSITIONS and some positions were left out
    num_layers: int

    @property
    def note(self) -> str:
        if not self.capped:
            return ""
        return (f"The texts are {len(self.clean_tokens)} tokens long; {MAX_PATCH_POSITIONS} positions are patched "
                "(those where the texts differ and the mask first, then the others from the left).")


def clean_states(request: Request) -> tuple[dict[int, torch.Tensor], torch.Tensor]:
    """Every layer's output in the clean run (layer -> (1, T, d)) and its (V,) probabilities at the mask."""
    states: dict[int, torch.Tensor] = {}

    def hooks_for(_part):
        hooks = Interventions(request.family, request.loaded.model)
        for layer in range(request.num_layers):
            hooks.at("resid_post", layer, record(states, layer))
        return hooks

    probs = run_rows(request, [None], hooks_for)[0, 0].softmax(-1)
    return states, probs


def patched_probabilities(corrupt: Request, states: dict[int, torch.Tensor],
                          patches: list[tuple[int, list[int]]]) -> torch.Tensor:
    """(len(patches), V) probabilities at the mask of the corrupt run, one row per (layer,
    positions) patch: the clean ``states`` of that layer at those positions copied in."""

    def hooks_for(part):
        hooks = Interventions(corrupt.family, corrupt.loaded.model)
        for layer in {l for l, _ in part}:
            rows = [row for row, (l, _) in enumerate(part) if l == layer]
            hooks.at("resid_post", layer, copy_in(rows, [list(part[r][1]) for r in rows], states[layer]))
        return hooks

    return run_rows(corrupt, patches, hooks_for)[:, 0].softmax(-1)


def _positions(clean: Request, corrupt: Request) -> tuple[tuple[int, ...], bool]:
    length = clean.length
    if length <= MAX_PATCH_POSITIONS:
        return tuple(range(length)), False
    a, b = clean.inputs["input_ids"][0], corrupt.inputs["input_ids"][0]
    first = [clean.position] + [i for i in range(length) if a[i] != b[i] and i != clean.position]
    rest = [i for i in range(length) if i not in first]
    return tuple(sorted((first + rest)[:MAX_PATCH_POSITIONS])), True


def patch_activations(model_key: str, clean_text: str, corrupt_text: str, target: str | None = None) -> PatchResult:
    """A layers x positions grid of p(target) at the first mask of the corrupt run when the
    clean run's output of that layer at that position is copied in; with ``p_clean`` and
    ``p_corrupt`` (nothing copied). target: the clean run's top guess when not given (a word
    of several pieces: its first piece). The texts must tokenize to the same length."""
    spec = catalogue.get_spec(model_key)
    clean = prepare(spec, clean_text, what="clean text")
    corrupt = prepare(spec, corrupt_text, what="corrupt text")
    if clean.length != corrupt.length:
        raise InputError(
            f"clean_text is {clean.length} tokens and corrupt_text is {corrupt.length} tokens for {spec.key}; "
            "patching copies states position by position, so both must have the same number of tokens "
            "(change a word for one of the same length, e.g. France / Italy).")
    if clean.position != corrupt.position:
        raise InputError(
            f"The first mask is token {clean.position} of clean_text but token {corrupt.position} of corrupt_text; "
            "put it at the same place in both.")
    states, probs = clean_states(clean)
    chosen = target_for(clean, target, int(probs.argmax()))
    p_corrupt = run_rows(corrupt, [None], no_edits(corrupt))[0, 0].softmax(-1)[chosen.token_id]
    positions, capped = _positions(clean, corrupt)
    patches = [(layer, [p]) for layer in range(clean.num_layers) for p in positions]
    grid = patched_probabilities(corrupt, states, patches)[:, chosen.token_id]
    grid = grid.reshape(clean.num_layers, len(positions)).numpy()
    grid.flags.writeable = False
    return PatchResult(spec.key, clean.family, clean.text, corrupt.text, clean.tokens, corrupt.tokens,
                       clean.position, chosen, float(probs[chosen.token_id]), float(p_corrupt), positions, grid,
                       capped, clean.num_layers)
