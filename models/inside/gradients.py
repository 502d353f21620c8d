"""Where the masked-LM loss sends its gradient: every input token, though only masks count.

``mlm_gradients`` masks some tokens of a sentence (their original tokens are the labels,
as in pre-training), runs the model with ``labels`` so that transformers computes its own
MLM loss (cross-entropy over the masked positions only, label -100 elsewhere), and takes
the gradient of that loss with autograd:

* with respect to each input embedding (the word-embedding vectors fed to the model): it
  is not zero at unmasked positions, because attention mixes every token into the masked
  ones' representations;
* with respect to each position's logits: exactly zero at every unmasked position, since
  their predictions are not in the loss.

One coordinate of the embedding gradient is checked against a central finite difference
of the same loss. ``torch.autograd.grad`` is used, so nothing accumulates in the shared
model's ``.grad``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import torch

from ..registry import catalogue
from ..errors import InputError
from ..mlm.fill_mask import MASK_PATTERN
from ..runtime.loading import check_token_count, load_model, require_head
from ..validation import check_int, check_text

FD_EPS = 1e-2  # the finite difference's step, on one embedding coordinate


@dataclass(frozen=True, eq=False)
class MLMGradients:
    """``mlm_gradients``' result. Arrays are per token (T,)."""

    model_key: str
    text: str
    tokens: tuple[str, ...]  # the sentence's own tokens (the labels at the masked positions)
    inputs: tuple[str, ...]  # what the model read: masked positions replaced by the mask token
    masked: tuple[int, ...]  # token indices that were masked (the loss counts only these)
    special: tuple[bool, ...]
    loss: float  # transformers' own MLM loss: mean cross-entropy over the masked positions
    embedding_grad_norms: np.ndarray  # ‖∂loss/∂e_t‖ for each input embedding e_t
    logit_grad_norms: np.ndarray  # ‖∂loss/∂logits_t‖: exactly 0 at unmasked positions
    fd_position: int  # the unmasked token whose embedding coordinate was checked
    fd_dim: int
    fd_autograd: float  # ∂loss/∂e[fd_position, fd_dim] from autograd
    fd_estimate: float  # (loss(e + ε) − loss(e − ε)) / 2ε
    fd_eps: float

    @property
    def unmasked(self) -> tuple[int, ...]:
        return tuple(i for i in range(len(self.tokens)) if i not in self.masked and not self.special[i])

    @property
    def masked_mean_norm(self) -> float:
        return float(np.mean(self.embedding_grad_norms[list(self.masked)]))

    @property
    def unmasked_mean_norm(self) -> float:
        rows = list(self.unmasked)
        return float(np.mean(self.embedding_grad_norms[rows])) if rows else 0.0

    @property
    def fd_relative_error(self) -> float:
        scale = max(abs(self.fd_autograd), abs(self.fd_estimate), 1e-12)
        return abs(self.fd_autograd - self.fd_estimate) / scale


def mlm_gradients(model_key: str, text: str, masked: tuple[int, ...] | list[int] | None = None,
                  check_position: int | None = None) -> MLMGradients:
    """Mask ``masked`` (a list or tuple of token indices; None or empty: the middle word token) in ``text`` and
    follow the MLM loss's gradient back to every input embedding.

    The text is written without masks: its own tokens are the labels. ``check_position``:
    the unmasked token whose embedding coordinate is checked by finite difference (default:
    the first unmasked word token). A model without an MLM head is a ``CapabilityError``; a
    position out of range, a special token or a text with a mask is an ``InputError``.
    """
    spec = catalogue.get_spec(model_key)
    require_head(spec, "mlm")
    text = check_text(text)
    if MASK_PATTERN.search(text):
        raise InputError("Write the sentence without [MASK]: its own tokens are the labels. Choose the "
                         "tokens to mask by their index (masked=...).")
    loaded = load_model(spec, "mlm", attn_implementation="eager")
    tokenizer, model = loaded.tokenizer, loaded.model
    if loaded.dtype != torch.float32:
        # In float16 (a GPU) a loss keeps about three digits, so the finite difference of two
        # losses 2ε apart is rounding noise (a 30 % "error"): gradients and check run on a
        # float32 copy (the shared cached model stays as it is), as the float32 CPU runs them.
        model = copy.deepcopy(model).float()
    enc = tokenizer(text, truncation=False, return_tensors="pt", return_special_tokens_mask=True, verbose=False)
    special = tuple(bool(s) for s in enc.pop("special_tokens_mask")[0].tolist())
    ids = enc["input_ids"][0]
    n = len(ids)
    check_token_count(loaded, n)
    words = [i for i in range(n) if not special[i]]
    if len(words) < 2:
        raise InputError("The text needs at least two word tokens: one to mask, one to read.")
    if masked is None or (isinstance(masked, (list, tuple)) and not masked):
        masked = (words[len(words) // 2],)
    elif not isinstance(masked, (list, tuple)):
        raise InputError(f"masked must be a list of token indices, e.g. [{words[0]}]; got {masked!r}.")
    masked = tuple(sorted({check_int(m, "masked position (token index)", 0, n - 1) for m in masked}))
    if any(special[m] for m in masked):
        raise InputError(f"Masked positions must be word tokens ({words[0]} to {words[-1]}), not special tokens.")
    if len(masked) == len(words):
        raise InputError("Leave at least one word token unmasked: the point is to see its gradient.")
    unmasked = [i for i in words if i not in masked]
    if check_position is None:
        check_position = unmasked[0]
    check_position = check_int(check_position, "check position (token index)", 0, n - 1)
    if check_position not in unmasked:
        raise InputError(f"The finite-difference check needs an unmasked word token: one of {unmasked}.")

    input_ids = ids.clone()
    input_ids[list(masked)] = tokenizer.mask_token_id
    labels = torch.full_like(ids, -100)
    labels[list(masked)] = ids[list(masked)]
    device = loaded.device
    extra = {k: v.to(device) for k, v in enc.items() if k in tokenizer.model_input_names and k != "input_ids"}
    with torch.no_grad():
        base = model.get_input_embeddings()(input_ids[None].to(device)).detach()

    def loss_of(embeds):
        out = model(inputs_embeds=embeds, labels=labels[None].to(device), **extra)
        return out.loss, out.logits

    embeds = base.clone().requires_grad_(True)
    with torch.enable_grad():
        loss, logits = loss_of(embeds)
        grad_e, grad_logits = torch.autograd.grad(loss, [embeds, logits])
    grad_e, grad_logits = grad_e[0].float().cpu(), grad_logits[0].float().cpu()
    dim = int(grad_e[check_position].abs().argmax())
    with torch.no_grad():
        losses = []
        for sign in (1, -1):
            shifted = base.clone()
            shifted[0, check_position, dim] += sign * FD_EPS
            losses.append(float(loss_of(shifted)[0]))
    estimate = (losses[0] - losses[1]) / (2 * FD_EPS)

    def frozen(a: torch.Tensor) -> np.ndarray:
        out = a.numpy()
        out.flags.writeable = False
        return out

    tokens = tuple(tokenizer.convert_ids_to_tokens(ids.tolist()))
    return MLMGradients(
        model_key=model_key, text=text, tokens=tokens,
        inputs=tuple(tokenizer.convert_ids_to_tokens(input_ids.tolist())), masked=masked, special=special,
        loss=float(loss.detach()), embedding_grad_norms=frozen(grad_e.norm(dim=-1)),
        logit_grad_norms=frozen(grad_logits.norm(dim=-1)), fd_position=check_position, fd_dim=dim,
        fd_autograd=float(grad_e[check_position, dim]), fd_estimate=float(estimate), fd_eps=FD_EPS,
    )
