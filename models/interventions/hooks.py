"""Edits at named points of every family's own modules: one mechanism for ablation,
patching and the logit lens.

Two hook points, named as TransformerLens names them, found in each family's modules by
``models.inside.families.layer_modules`` (the lookup Inside one layer uses):

* ``"z"``: the input of layer ``l``'s attention output projection W_O, the heads side by
  side, (B, T, heads · d_head). Head ``h`` is the column slice ``h·d_head:(h+1)·d_head``.
* ``"resid_post"``: layer ``l``'s output, (B, T, d_model): the residual stream after the
  layer (post-LN families: after its last LayerNorm; ModernBERT: before the final norm).

An edit is a function ``edit(value, layer_input) -> value`` (``layer_input``: the layer's
input, given to ``resid_post`` edits; None for ``z``). ALBERT's layers are one module
called once per layer: a hook counts the calls of its module in a pass and so knows which
layer each call is, and an edit for layer 2 leaves the calls for layers 0, 1 and 3 alone.

The models are shared by the app's worker threads: a hook edits only the calls made by
the thread that entered the ``with`` block, and the hooks are removed when it ends.
"""

from __future__ import annotations

import threading
from typing import Callable

import torch

from ..inside.families import layer_modules, num_layers

POINTS = ("z", "resid_post")
Edit = Callable[[torch.Tensor, torch.Tensor | None], torch.Tensor]


def layer_input(args: tuple, kwargs: dict) -> torch.Tensor:
    """A layer's input hidden states: its first argument in every family's encoder loop."""
    return args[0] if args else kwargs["hidden_states"]


class Interventions:
    """Edits at hook points of one model, for the passes run inside its ``with`` block."""

    def __init__(self, family: str, model):
        self.family, self.model = family, model
        self.layers = [layer_modules(family, model, layer) for layer in range(num_layers(model))]
        self.edits: dict[tuple[str, int], Edit] = {}
        self._handles: list = []

    def at(self, point: str, layer: int, edit: Edit) -> "Interventions":
        if point not in POINTS:
            raise ValueError(f"Unknown hook point {point!r}; the points are {', '.join(POINTS)}.")
        self.edits[(point, layer)] = edit
        return self

    def _module(self, point: str, layer: int):
        mods = self.layers[layer]
        return mods.projection if point == "z" else mods.layer

    def _which_layer(self, point: str) -> dict[int, list[int]]:
        """id(module) -> the layers it runs, in call order (ALBERT: several; others: one)."""
        runs: dict[int, list[int]] = {}
        for layer, mods in enumerate(self.layers):
            runs.setdefault(id(self._module(point, layer)), []).append(layer)
        return runs

    def __enter__(self) -> "Interventions":
        thread = threading.get_ident()
        for point in POINTS:
            runs = self._which_layer(point)
            modules = {id(self._module(point, l)): self._module(point, l) for l in range(len(self.layers))}
            for key, module in modules.items():
                layers = runs[key]
                if not any((point, l) in self.edits for l in layers):
                    continue
                calls = [0]

                def which(layers=layers, calls=calls) -> int:
                    layer = layers[calls[0] % len(layers)]  # the n-th call of a pass is its n-th layer
                    calls[0] += 1
                    return layer

                if point == "z":
                    def pre(mod, args, which=which):
                        if threading.get_ident() != thread:
                            return None
                        edit = self.edits.get(("z", which()))
                        return None if edit is None else (edit(args[0], None), *args[1:])

                    self._handles.append(module.register_forward_pre_hook(pre))
                else:
                    def post(mod, args, kwargs, output, which=which):
                        if threading.get_ident() != thread:
                            return None
                        edit = self.edits.get(("resid_post", which()))
                        if edit is None:
                            return None
                        hidden = output[0] if isinstance(output, tuple) else output  # DeBERTa: (states, weights)
                        new = edit(hidden, layer_input(args, kwargs))
                        return (new, *output[1:]) if isinstance(output, tuple) else new

                    self._handles.append(module.register_forward_hook(post, with_kwargs=True))
        return self

    def __exit__(self, *exc) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()


# --- edits ------------------------------------------------------------------------------


def knock_out(rows_heads: list[tuple[int, int]], n_heads: int, mode: str = "zero") -> Edit:
    """A ``z`` edit: in each (batch row, head) pair, the head's slice set to 0 ("zero") or
    to its mean over the text's positions ("mean"); every other number untouched."""

    def edit(z: torch.Tensor, _input) -> torch.Tensor:
        d_head = z.shape[-1] // n_heads
        z = z.clone()
        for row, head in rows_heads:
            cols = slice(head * d_head, (head + 1) * d_head)
            z[row, :, cols] = 0 if mode == "zero" else z[row, :, cols].mean(dim=0, keepdim=True)
        return z

    return edit


def skip_from(rows: list[int]) -> Edit:
    """A ``resid_post`` edit: the given batch rows leave this layer unchanged (output = input)."""

    def edit(hidden: torch.Tensor, given: torch.Tensor) -> torch.Tensor:
        hidden = hidden.clone()
        hidden[rows] = given[rows]
        return hidden

    return edit


def copy_in(rows: list[int], positions: list[list[int]], source: torch.Tensor) -> Edit:
    """A ``resid_post`` edit: at each row, the listed positions replaced by ``source``'s
    (1, T, d) values there (a patch from another run)."""

    def edit(hidden: torch.Tensor, _input) -> torch.Tensor:
        hidden = hidden.clone()
        for row, cols in zip(rows, positions):
            hidden[row, cols] = source[0, cols].to(hidden.dtype)
        return hidden

    return edit


def record(store: dict[int, torch.Tensor], layer: int) -> Edit:
    """A ``resid_post`` "edit" that keeps a copy of the layer's output and changes nothing."""

    def edit(hidden: torch.Tensor, _input) -> torch.Tensor:
        store[layer] = hidden.detach().clone()
        return hidden

    return edit
