"""Why this guess: which input tokens made a model predict what it did, and a check of it.

Four methods score each input token for one scalar of a forward pass, here p(target) at a
chosen mask (the softmax probability of the target token over the whole vocabulary):

* ``gradient_x_input``: Captum's ``InputXGradient`` on the word embeddings, summed over
  the hidden dimension (a first-order, local estimate).
* ``integrated_gradients``: Captum's ``IntegratedGradients`` on the word embeddings, from a
  named baseline (every token but the specials and the chosen mask replaced by the mask
  token) to the input; the scores sum to f(input) - f(baseline) up to Captum's reported
  completeness gap (``completeness_delta``).
* ``attention_rollout``: the chosen mask's row of the last layer's rollout
  (``models.attention.weights``) of the model that guessed (ELECTRA: its generator): where
  information may have flowed from, the same for every target.
* ``leave_one_out``: p(target) minus p(target) with that one token replaced by the mask
  token (occlusion): what the model does without it, token by token.

``deletion_curve`` checks a method on the input at hand: p(target) as the top-attributed
tokens are replaced one by one, against the same for random orders; the area between the
curves is the method's faithfulness here (higher: its top tokens matter more than chance).

Thread safety: the cached model is shared by concurrent requests, so nothing here changes
it: no ``.train()``, no ``requires_grad`` change, no hook on its layers (Captum's layer
methods hook the embedding layer for the length of a call, and a concurrent request would
run through that hook). The gradient methods instead feed the word embeddings through
``inputs_embeds`` (the same computation as ``LayerIntegratedGradients`` on the embedding
layer, tested) under a local ``torch.enable_grad()``; grad mode is per thread, and
``torch.autograd.grad`` (what Captum calls) never writes ``.grad`` on the parameters.

Scoring is generic: ``ScalarTarget`` wraps any scalar of a forward pass (a class
probability of a classification head plugs in the same way as a mask's p(target)).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..attention.weights import attention_rollout
from ..errors import InputError
from ..mlm.fill_mask import MAX_MASKS, encode_masks, mask_spans
from ..mlm.masked_head import gather_positions
from ..registry import catalogue
from ..registry.spec import ModelSpec
from ..runtime.loading import RESULT_CACHES, LoadedModel, ModelCache, get_device, load_model, require_head
from .methods import (
    RANDOM_ORDERS,
    ScalarTarget,
    curve_area,
    deletion_scores,
    gradient_x_input,
    integrated_gradients,
    leave_one_out,
    random_deletion,
)
from ..validation import check_int, check_text

ATTRIBUTION_METHODS = (
    "gradient_x_input",
    "integrated_gradients",
    "attention_rollout",
    "leave_one_out",
)
DEFAULT_IG_STEPS = 32
MAX_IG_STEPS = 256
# Occlusion and deletion cost one forward pass per token (deletion: 1 + RANDOM_ORDERS
# curves), so the cost grows with the square of the length: longer texts are refused.
MAX_ATTRIBUTION_TOKENS = 128


# --- results ----------------------------------------------------------------------------


@dataclass(frozen=True)
class AttributionResult:
    """Per-token scores of one method for p(target) at one mask.

    ``scores[i]`` belongs to ``tokens[i]``; only positions with ``candidates[i]`` (neither a
    special token nor a mask) are ranked and deleted; the others keep the method's raw
    value (0 where the method gives none).
    """

    model_key: str
    text: str  # the text as the model read it (its own mask token)
    method: str
    tokens: tuple[str, ...]
    scores: tuple[float, ...]
    candidates: tuple[bool, ...]
    mask_index: int  # 0 for the text's first mask
    mask_position: int  # its token position
    target_token: str  # decoded, as fill-mask shows it
    target_id: int
    target_probability: float  # p(target) on the whole input: what is explained
    replacement: str  # the token that stands for "removed" (baseline, occlusion, deletion)
    baseline: str = ""  # integrated gradients: the baseline, in words
    baseline_probability: float | None = None  # f(baseline)
    completeness_delta: float | None = None  # Captum: sum(scores) - (f(input) - f(baseline))
    n_steps: int | None = None  # integrated gradients' steps (Gauss-Legendre)

    @property
    def nbytes(self) -> int:  # for the result cache's budget: a rough size
        return 200 * len(self.tokens) + 1000

    def ranking(self) -> list[int]:
        """Candidate positions, highest score first (ties: leftmost first)."""
        positions = [i for i, c in enumerate(self.candidates) if c]
        return sorted(positions, key=lambda i: (-self.scores[i], i))


@dataclass(frozen=True)
class DeletionCurve:
    """p(target) as tokens are removed: the method's top-ranked first, and at random.

    ``attributed[k]`` / ``random[k]``: p(target) with k tokens replaced by ``replacement``
    (``random`` is the mean over ``random_orders`` seeded random orders). ``area``: the
    area between the random and attributed curves over the fraction of tokens removed
    (0 to 1), in units of probability; positive when removing the method's top tokens
    lowers p(target) faster than removing random ones.
    """

    model_key: str
    text: str
    method: str
    tokens: tuple[str, ...]
    order: tuple[int, ...]  # token positions in the order the method removes them
    attributed: tuple[float, ...]
    random: tuple[float, ...]
    random_orders: int
    area: float
    target_token: str
    target_id: int
    replacement: str


# --- fill-mask ------------------------------------------------------------------------------


def mask_target(loaded: LoadedModel, inputs: dict, position: int,
                target_id: int | None = None) -> tuple[ScalarTarget, int]:
    """p(target) at one mask ``position`` of an encoded input (batch of 1), and the target id.

    target_id None: the model's top guess there. Special tokens and masks are not
    candidates; "removed" means replaced by the mask token. The MLM head projects the mask
    position only (fill-mask's gathering hook, active for this thread within each forward).
    """
    tokenizer, model = loaded.tokenizer, loaded.model
    ids = inputs["input_ids"][0]
    special = tokenizer.get_special_tokens_mask(ids.tolist(), already_has_special_tokens=True)
    candidates = tuple(not s and int(t) != tokenizer.mask_token_id for s, t in zip(special, ids.tolist()))
    extra = {k: v for k, v in inputs.items() if k != "input_ids"}

    def prepare():
        return gather_positions(model, [position], loaded.device)

    def probabilities(outputs) -> torch.Tensor:  # (B, V) at the mask
        logits = outputs.logits
        column = 0 if logits.shape[1] == 1 else position  # re-padding heads give every position
        return logits[:, column].float().softmax(-1)

    if target_id is None:
        with torch.inference_mode(), prepare():
            device_inputs = {k: v.to(loaded.device) for k, v in inputs.items()}
            target_id = int(probabilities(model(**device_inputs))[0].argmax())  # the top guess
    target = ScalarTarget(
        loaded, ids, extra, lambda outputs: probabilities(outputs)[:, target_id], candidates,
        tokenizer.mask_token_id, prepare,
    )
    return target, target_id


@dataclass(frozen=True)
class _MaskCase:
    loaded: LoadedModel
    model_text: str
    tokens: tuple[str, ...]
    position: int
    target_id: int
    target_token: str
    target: ScalarTarget


def _mask_case(spec: ModelSpec, text: str, mask_index, target: str | None) -> _MaskCase:
    """Check, encode (fill-mask's own encoding) and build the scalar p(target) at a mask."""
    require_head(spec, "mlm")
    text = check_text(text)
    spans = mask_spans(text)
    mask_index = check_int(mask_index, "mask_index", 0, MAX_MASKS)
    if mask_index >= len(spans):
        raise InputError(
            f"The text has {len(spans)} mask(s), so there is no mask number {mask_index + 1} "
            f"(mask_index {mask_index}; 0 is the first mask)."
        )
    loaded = load_model(spec, head="mlm")
    encoded = encode_masks(loaded, text, spans)
    tokenizer = loaded.tokenizer
    ids = encoded.inputs["input_ids"][0]
    if len(ids) > MAX_ATTRIBUTION_TOKENS:
        raise InputError(
            f"Your text is {len(ids)} tokens long; attributions are computed for texts of up to "
            f"{MAX_ATTRIBUTION_TOKENS} tokens (each method runs the model once per token). Shorten it."
        )
    position = encoded.positions[mask_index]
    target_id = None if target is None or (isinstance(target, str) and not target.strip()) \
        else _target_id(loaded, target)
    target_fn, target_id = mask_target(loaded, encoded.inputs, position, target_id)
    return _MaskCase(
        loaded=loaded,
        model_text=encoded.model_text,
        tokens=tuple(tokenizer.convert_ids_to_tokens(ids.tolist())),
        position=position,
        target_id=target_id,
        target_token=tokenizer.decode([target_id]),
        target=target_fn,
    )


TARGET_KINDS = "target must be a word, a token id, or empty for the top guess."


def _target_id(loaded: LoadedModel, word: str | int) -> int:
    """The one vocabulary entry for ``word``: a token id, the word as written, or as the
    tokenizer writes it after a space (Ġdoor, ▁door); an ``InputError`` when it is several
    pieces or unknown."""
    tokenizer = loaded.tokenizer
    if isinstance(word, int) and not isinstance(word, bool):
        return check_int(word, "target (a token id)", 0, len(tokenizer) - 1)
    if not isinstance(word, str):
        raise InputError(TARGET_KINDS)
    word = word.strip()
    vocab = tokenizer.get_vocab()
    if word in vocab:
        return int(vocab[word])
    for pieces in (tokenizer.tokenize(" " + word), tokenizer.tokenize(word)):
        if len(pieces) == 1 and pieces[0] in vocab:
            return int(vocab[pieces[0]])
    pieces = tokenizer.tokenize(word)[:8]
    raise InputError(
        f"{word[:40]!r} is not one token of {loaded.spec.key}'s vocabulary (it splits into "
        f"{pieces}); choose a word the model can guess in one piece, or leave the target empty "
        "for its top guess."
    )


RESULT_CACHE = ModelCache(16 * 2**20, part="attributions")  # attributions reused by the deletion curves
RESULT_CACHES.append(RESULT_CACHE)


def attribute_fill_mask(
    model_key: str,
    text: str,
    method: str,
    mask_index: int = 0,
    target: str | int | None = None,
    n_steps: int = DEFAULT_IG_STEPS,
) -> AttributionResult:
    """Per input token, how much it made the model give ``target`` at a mask.

    method: one of ``ATTRIBUTION_METHODS``. mask_index: which mask of the text (0 = first).
    target: a word of the model's vocabulary (or its token id); None or empty: the top guess.
    n_steps: integrated gradients' steps (ignored by the other methods).
    Raises ``EncoderLabError`` subclasses on bad input.
    """
    if method not in ATTRIBUTION_METHODS:
        raise InputError(f"Unknown method {method!r}; choose one of: {', '.join(ATTRIBUTION_METHODS)}.")
    n_steps = check_int(n_steps, "n_steps", 2, MAX_IG_STEPS)
    # The arguments are the cache's key: checked first, so a list or a dict (unhashable) is an
    # InputError, and mask_index 1.0 or np.int64(1) finds the result of 1.
    spec = catalogue.get_spec(model_key)
    text = check_text(text)
    mask_index = check_int(mask_index, "mask_index", 0, MAX_MASKS)
    if not (target is None or isinstance(target, (str, int, np.integer)) and not isinstance(target, bool)):
        raise InputError(TARGET_KINDS)
    target = int(target) if isinstance(target, np.integer) else target
    target_key = target.strip() if isinstance(target, str) else target
    key = ("attribution", model_key, text, method, mask_index, target_key,
           n_steps if method == "integrated_gradients" else None, str(get_device()))
    return RESULT_CACHE.get(key, lambda: _attribute(spec, text, method, mask_index, target, n_steps))


def _attribute(spec, text, method, mask_index, target, n_steps) -> AttributionResult:
    case = _mask_case(spec, text, mask_index, target)
    scalar = case.target
    full = float(scalar.on_ids(scalar.input_ids[None])[0])
    extra = {}
    if method == "gradient_x_input":
        scores = gradient_x_input(scalar)
    elif method == "integrated_gradients":
        scores, delta = integrated_gradients(scalar, n_steps)
        replacement = case.loaded.tokenizer.convert_ids_to_tokens(scalar.replacement_id)
        extra = {
            "baseline": f"every token but the special tokens and the masks replaced by {replacement}",
            "baseline_probability": float(scalar.on_ids(scalar.baseline_ids()[None])[0]),
            "completeness_delta": delta,
            "n_steps": n_steps,
        }
    elif method == "attention_rollout":
        scores = _rollout_row(case)
    else:
        scores = leave_one_out(scalar)
    return AttributionResult(
        model_key=spec.key,
        text=case.model_text,
        method=method,
        tokens=case.tokens,
        scores=tuple(float(s) for s in scores),
        candidates=scalar.candidates,
        mask_index=int(mask_index),
        mask_position=case.position,
        target_token=case.target_token,
        target_id=case.target_id,
        target_probability=full,
        replacement=case.loaded.tokenizer.convert_ids_to_tokens(scalar.replacement_id),
        **extra,
    )


def _rollout_row(case: _MaskCase) -> np.ndarray:
    """The mask's row of the last layer's attention rollout of the model that made the guess
    (its MLM model, eager: ELECTRA's generator, not the discriminator), on the same tokens."""
    loaded = load_model(case.loaded.spec, head="mlm", attn_implementation="eager")
    inputs = {"input_ids": case.target.input_ids[None], **case.target.extra_inputs}
    with torch.inference_mode():
        out = loaded.model(**{k: v.to(loaded.device) for k, v in inputs.items()}, output_attentions=True)
    weights = torch.stack([a[0] for a in out.attentions]).float().cpu().numpy()  # (L, H, T, T)
    return attention_rollout(weights)[-1, case.position].astype(np.float64)


def deletion_curve(
    model_key: str,
    text: str,
    method: str,
    mask_index: int = 0,
    target: str | int | None = None,
    n_steps: int = DEFAULT_IG_STEPS,
) -> DeletionCurve:
    """p(target) as the method's top tokens are replaced one by one, against random orders.

    Tokens are replaced by the model's mask token (positions and length kept); special
    tokens and masks are never removed. Arguments as ``attribute_fill_mask``.
    """
    result = attribute_fill_mask(model_key, text, method, mask_index, target, n_steps)
    case = _mask_case(catalogue.get_spec(model_key), text, mask_index, result.target_id)
    order = result.ranking()
    attributed = deletion_scores(case.target, order)
    key = ("random-deletion", model_key, text, mask_index, result.target_id, str(get_device()))
    random = RESULT_CACHE.get(key, lambda: _RandomCurve(random_deletion(case.target))).values
    return DeletionCurve(
        model_key=model_key,
        text=result.text,
        method=method,
        tokens=result.tokens,
        order=tuple(order),
        attributed=tuple(float(v) for v in attributed),
        random=tuple(float(v) for v in random),
        random_orders=RANDOM_ORDERS,
        area=curve_area(attributed, random),
        target_token=result.target_token,
        target_id=result.target_id,
        replacement=result.replacement,
    )


@dataclass(frozen=True)
class _RandomCurve:
    values: np.ndarray

    @property
    def nbytes(self) -> int:
        return int(self.values.nbytes) + 100
