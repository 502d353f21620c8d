"""The attribution engine: one scalar of any forward pass (``ScalarTarget``), the methods
that score its input tokens (Captum's gradient × input and integrated gradients, leave-one-
out), and the deletion check. ``attribution`` applies them to a mask's p(target),
``attribution_heads`` to a trained head's p(class); see ``attribution`` for thread safety.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np
import torch

from ..runtime.loading import LoadedModel

RANDOM_SEED = 0
RANDOM_ORDERS = 5  # random deletion orders averaged for the reference curve
_BATCH = 32  # rows per forward pass for occlusion and deletion (bounds memory)


# --- a scalar of any forward pass ---------------------------------------------------------


@dataclass(frozen=True)
class ScalarTarget:
    """One scalar of a model's forward pass, per batch row: what the methods explain.

    ``score(outputs)`` maps the model's outputs for a batch to a (B,) float tensor (e.g. the
    softmax probability of one token at one mask, or of one class). ``prepare(model)``,
    optional, returns a context manager entered around every forward (the fill-mask head
    uses it to project the mask position only).
    """

    loaded: LoadedModel
    input_ids: torch.Tensor  # (T,) on the CPU
    extra_inputs: dict  # other model inputs of shape (1, T) (attention mask, segment ids)
    score: Callable[[object], torch.Tensor]
    candidates: tuple[bool, ...]
    replacement_id: int
    prepare: Callable | None = None

    def _run(self, **inputs) -> torch.Tensor:
        batch = next(iter(inputs.values())).shape[0]
        device = self.loaded.device
        extra = {k: v.to(device).expand(batch, -1) for k, v in self.extra_inputs.items()}
        if self.prepare is None:
            return self.score(self.loaded.model(**inputs, **extra))
        with self.prepare():
            return self.score(self.loaded.model(**inputs, **extra))

    def on_ids(self, ids: torch.Tensor) -> np.ndarray:
        """The scalar for a (B, T) batch of token ids, no gradients: (B,) float64."""
        out = []
        with torch.inference_mode():
            for chunk in ids.split(_BATCH):
                out.append(self._run(input_ids=chunk.to(self.loaded.device)).cpu().double())  # MPS has no float64
        return torch.cat(out).numpy()

    def on_embeddings(self, embeds: torch.Tensor) -> torch.Tensor:
        """The scalar for a (B, T, H) batch of word embeddings (differentiable): (B,)."""
        return self._run(inputs_embeds=embeds)

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        """The model's own word embeddings of (T,) ids: (1, T, H), detached."""
        layer = self.loaded.model.get_input_embeddings()
        with torch.no_grad():
            return layer(ids.to(self.loaded.device)[None]).detach()

    def baseline_ids(self) -> torch.Tensor:
        """Every candidate token replaced by the replacement token; the rest kept."""
        keep = torch.tensor(self.candidates)
        return torch.where(keep, torch.full_like(self.input_ids, self.replacement_id), self.input_ids)


def in_float32(target: ScalarTarget) -> ScalarTarget:
    """``target`` on a float32 copy of its model when the model is in half precision (a GPU).

    The gradient methods differentiate p(target): in float16 its gradients keep about three
    digits and a small p's underflow, so scores came out 20-50 % off float32's. The copy is
    private to the call (the shared cached model stays as it is); its tokenizer is shared."""
    loaded = target.loaded
    if loaded.dtype == torch.float32:
        return target
    tokenizer = getattr(loaded.model, "tokenizer", None)  # a classifier carries its tokenizer
    memo = {id(tokenizer): tokenizer} if tokenizer is not None else {}
    model = copy.deepcopy(loaded.model, memo).float()
    return replace(target, loaded=replace(loaded, model=model, dtype=torch.float32))


def gradient_x_input(target: ScalarTarget) -> np.ndarray:
    """Captum ``InputXGradient`` on the word embeddings, summed per token: (T,)."""
    from captum.attr import InputXGradient

    target = in_float32(target)
    embeds = target.embed(target.input_ids)
    with torch.enable_grad():
        attributions = InputXGradient(target.on_embeddings).attribute(embeds.requires_grad_())
    return attributions[0].detach().cpu().double().sum(-1).numpy()  # MPS has no float64


def integrated_gradients(target: ScalarTarget, n_steps: int) -> tuple[np.ndarray, float]:
    """Captum ``IntegratedGradients`` on the word embeddings from ``baseline_ids``.

    Returns the per-token scores (T,) and Captum's completeness delta,
    sum(scores) - (f(input) - f(baseline)).
    """
    from captum.attr import IntegratedGradients

    target = in_float32(target)
    embeds = target.embed(target.input_ids)
    baseline = target.embed(target.baseline_ids())
    with torch.enable_grad():
        attributions, delta = IntegratedGradients(target.on_embeddings).attribute(
            embeds,
            baselines=baseline,
            n_steps=n_steps,
            internal_batch_size=min(n_steps, 16),
            return_convergence_delta=True,
        )
    return attributions[0].detach().cpu().double().sum(-1).numpy(), float(delta[0])  # MPS has no float64


def leave_one_out(target: ScalarTarget) -> np.ndarray:
    """f(input) - f(input with token i replaced), for each candidate i; 0 elsewhere: (T,)."""
    positions = [i for i, c in enumerate(target.candidates) if c]
    scores = np.zeros(len(target.input_ids))
    if not positions:
        return scores
    batch = target.input_ids.repeat(len(positions), 1)  # (n, T)
    batch[torch.arange(len(positions)), torch.tensor(positions)] = target.replacement_id
    full = target.on_ids(target.input_ids[None])[0]
    scores[positions] = full - target.on_ids(batch)
    return scores


def deletion_scores(target: ScalarTarget, order: list[int]) -> np.ndarray:
    """f with the first k positions of ``order`` replaced, for k = 0..len(order): (n+1,)."""
    batch = target.input_ids.repeat(len(order) + 1, 1)  # row k: k tokens removed
    for k, position in enumerate(order, start=1):
        batch[k:, position] = target.replacement_id
    return target.on_ids(batch)


def random_deletion(target: ScalarTarget, orders: int = RANDOM_ORDERS, seed: int = RANDOM_SEED) -> np.ndarray:
    """The mean deletion curve over ``orders`` seeded random orders of the candidates."""
    positions = [i for i, c in enumerate(target.candidates) if c]
    rng = np.random.default_rng(seed)
    curves = [deletion_scores(target, [positions[j] for j in rng.permutation(len(positions))])
              for _ in range(orders)]
    return np.mean(curves, axis=0)


def curve_area(attributed: np.ndarray, random: np.ndarray) -> float:
    """Area between the random and the attributed curve over the fraction removed (0..1)."""
    if len(attributed) < 2:
        return 0.0
    x = np.linspace(0.0, 1.0, len(attributed))
    return float(np.trapezoid(np.asarray(random) - np.asarray(attributed), x))
