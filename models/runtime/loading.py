"""Cached loading of tokenizers and models: device, dtype, eval(), attention implementation.

* Device: CUDA, then Apple MPS, then CPU; overridable with ``set_device`` or the
  ``ENCODER_LAB_DEVICE`` environment variable.
* Half precision (float16) on a GPU, float32 on the CPU.
* Models are kept in an LRU cache bounded by a memory budget, and each one is loaded only
  once even when many requests ask for it at the same moment.
* ``trust_remote_code`` is never set: only the model code shipped with transformers runs.
* With no network, a Hub model that is not cached fails at once with a
  ``ModelUnavailableError`` that says how to fetch it, instead of retrying for a minute.
"""

from __future__ import annotations

import contextlib
import copy
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

# Imported eagerly: transformers' lazy imports are not safe from concurrent worker threads.
from transformers import (
    AutoModel,
    AutoModelForCausalLM,
    AutoModelForMaskedLM,
    AutoModelForNextSentencePrediction,
    AutoModelForPreTraining,
    AutoTokenizer,
)

from ..errors import CapabilityError, InputError, ModelUnavailableError
from ..registry import catalogue
from ..registry.spec import ModelSpec
from .memory import MEMORY, ModelCache, checkpoint_nbytes

# Building a model touches process-wide state in transformers (e.g. ``no_init_weights``
# swaps torch's init functions and skips weight tying for every thread while it is active).
# Every place that builds a model (loading, the meta-device architecture table, random-init
# timing models) does so under this one lock, so no build sees another's patches.
BUILD_LOCK = threading.RLock()
_DEVICE_NAMES = ("auto", "cpu", "cuda", "mps")


@dataclass(frozen=True)
class LoadedModel:
    """A model ready for inference, with the tokenizer and device it goes with."""

    spec: ModelSpec
    model: Any  # a transformers PreTrainedModel in eval mode
    tokenizer: Any  # a transformers (fast) tokenizer
    device: torch.device
    dtype: torch.dtype
    nbytes: int  # parameters + buffers, what the cache budget counts


# --- device ---------------------------------------------------------------------------

_device_override: str | None = None


def set_device(name: str | None) -> torch.device:
    """Choose the device for models loaded from now on ("auto", "cpu", "cuda", "mps")."""
    global _device_override
    if name is not None and name not in _DEVICE_NAMES:
        raise ValueError(f"Unknown device {name!r}; choose one of {', '.join(_DEVICE_NAMES)}.")
    _device_override = None if name in (None, "auto") else name
    clear_cache()
    return get_device()


def get_device() -> torch.device:
    """The device models run on: the override, else CUDA, then MPS, then CPU."""
    name = _device_override or os.environ.get("ENCODER_LAB_DEVICE", "auto")
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ModelUnavailableError("The device 'cuda' was asked for, but no CUDA GPU is visible.")
    if name == "mps" and not torch.backends.mps.is_available():
        raise ModelUnavailableError("The device 'mps' was asked for, but Apple MPS is not available.")
    return torch.device(name)


def dtype_for(device: torch.device) -> torch.dtype:
    """Half precision on a GPU, full precision on the CPU."""
    return torch.float16 if device.type in ("cuda", "mps") else torch.float32


# --- where the files come from ----------------------------------------------------------


def _pretrained_args(spec: ModelSpec) -> tuple[str, dict]:
    """(name or path, extra from_pretrained kwargs) for a spec, or ModelUnavailableError."""
    available, why = catalogue.availability(spec)
    if not available:
        raise ModelUnavailableError(f"{spec.display_name} ({spec.key}) is not available: {why}")
    if spec.source_kind == "hub":
        # Available but not reachable means cached: never let transformers retry the network.
        offline = catalogue.hub_offline() or not catalogue.hub_reachable()
        kwargs = {"local_files_only": offline}
        if catalogue.is_operator_added(spec):
            kwargs["use_safetensors"] = True  # never unpickle an unvetted checkpoint
        return spec.source, kwargs
    return str(catalogue.local_path(spec)), {"local_files_only": True}


def _load_failed(spec: ModelSpec, exc: Exception) -> ModelUnavailableError:
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return ModelUnavailableError(
        f"{spec.display_name} ({spec.key}) could not be loaded: {reason[:300]}"
    )


# --- caches -----------------------------------------------------------------------------


MODEL_CACHE = ModelCache(MEMORY.budget_bytes, part="models")
_tokenizers: dict[str, Any] = {}
_tokenizer_lock = threading.Lock()
_tokenizer_key_locks: dict[str, threading.Lock] = {}


# Other caches of results computed by models (e.g. attention weights), emptied with them.
RESULT_CACHES: list[ModelCache] = []


def clear_cache() -> None:
    """Forget every loaded model, tokenizer and cached result (e.g. after a device change)."""
    MODEL_CACHE.clear()
    for cache in RESULT_CACHES:
        cache.clear()
    with _tokenizer_lock:
        _tokenizers.clear()


def _require_spec(spec, caller: str) -> ModelSpec:
    """The request's spec, or a ``TypeError``: a key is resolved once, by the public function
    that receives it (``get_spec(key)``), and everything below takes the spec."""
    if not isinstance(spec, ModelSpec):
        raise TypeError(f"{caller} takes a ModelSpec, not {type(spec).__name__} {spec!r}: "
                        "resolve the key once with get_spec(key) and pass the spec.")
    return spec


def load_tokenizer(spec: ModelSpec):
    """The model's fast tokenizer, loaded once (one slow load never blocks other models)."""
    return _tokenizer_for(_require_spec(spec, "load_tokenizer"))


def _tokenizer_for(spec: ModelSpec, pretrained: tuple[str, dict] | None = None):
    """``load_tokenizer`` for a resolved spec; ``pretrained``: its ``_pretrained_args`` when the
    caller has them already (a model load checks availability once, not twice)."""
    model_key = spec.key
    with _tokenizer_lock:
        if model_key in _tokenizers:
            return _tokenizers[model_key]
        key_lock = _tokenizer_key_locks.setdefault(model_key, threading.Lock())
    with key_lock:
        with _tokenizer_lock:
            if model_key in _tokenizers:
                return _tokenizers[model_key]
        name, kwargs = pretrained or _pretrained_args(spec)
        try:
            tokenizer = AutoTokenizer.from_pretrained(name, trust_remote_code=False, **kwargs)
        except Exception as exc:  # a corrupt or incomplete folder: say which model and why
            raise _load_failed(spec, exc) from exc
        _serialise_encoding(tokenizer)
        with _tokenizer_lock:
            _tokenizers[model_key] = tokenizer
        return tokenizer


def _serialise_encoding(tokenizer) -> None:
    """Make one shared fast tokenizer safe for concurrent requests.

    Every encode first writes the call's truncation/padding settings into the one Rust
    tokenizer object, then encodes: two threads interleaving there get each other's
    settings (ragged batches, "Already borrowed"). Encoding takes microseconds, so calls
    are simply serialised per tokenizer.
    """
    encode = getattr(tokenizer, "_encode_plus", None)
    if encode is None:  # not a fast tokenizer of this transformers version: nothing shared
        return
    lock = threading.Lock()

    def locked(*args, **kwargs):
        with lock:
            return encode(*args, **kwargs)

    tokenizer._encode_plus = locked


def max_input_tokens(loaded: LoadedModel) -> int:
    """The longest input (in tokens, specials included) the model reads."""
    limits = [getattr(loaded.model.config, "max_position_embeddings", None)]
    model_max = getattr(loaded.tokenizer, "model_max_length", None)
    if model_max is not None and model_max < 1_000_000:  # "unset" is a huge sentinel
        limits.append(model_max)
    limits = [int(x) for x in limits if x]
    return min(limits) if limits else 512


def check_token_count(loaded: LoadedModel, n_tokens: int, what: str = "Your text") -> None:
    """An ``InputError`` when an input is longer than the model reads (one wording for all)."""
    limit = max_input_tokens(loaded)
    if n_tokens > limit:
        raise InputError(
            f"{what} is {n_tokens} tokens long; {loaded.spec.key} reads at most {limit} tokens. "
            "Shorten it."
        )


# The heads a model loads with, named by their capability word (``ModelSpec.can``), and
# what a checkpoint without one lacks, for the message (NSP has its own story).
_HEAD_MISSING = {
    "mlm": ("no trained masked-LM head (the layer that scores every vocabulary word at a position: "
            "fill-mask, the MLM loss, its gradients and a distillation teacher need it)", "Models that have one"),
    "nsp": ("no next-sentence-prediction head. Original BERT was pre-trained with NSP; RoBERTa showed "
            "that dropping it (and training on longer contiguous text) works as well or better, and most "
            "later encoders dropped it too", "Models that have one"),
    "sop": ("no sentence-order-prediction head (ALBERT's replacement for NSP)", "Models that have one"),
    "rtd": ("no replaced-token-detection discriminator (ELECTRA's objective)", "Models that have one"),
    "clm": ("no next-token head: it is an encoder, trained to fill blanks with both sides in view, not to "
            "continue a text (next_token needs a decoder)", "Decoders"),
}
# What a decoder cannot do, for the message: it reads left to right and predicts the next piece.
DECODER_REFUSAL = "a decoder does not fill blanks: see next_token"
HEADS = ("base", *_HEAD_MISSING)


def require_head(spec: ModelSpec, head: str) -> None:
    """A ``CapabilityError`` that says why, when the checkpoint lacks the asked-for head."""
    if head not in HEADS:
        raise ValueError(f"Unknown head {head!r}; choose one of {', '.join(HEADS)}.")
    if head == "base" or spec.can(head):
        return
    if spec.is_decoder:
        refuse_decoder(spec, {"mlm": "fill a mask", "nsp": "judge a sentence pair", "sop": "judge a sentence pair",
                              "rtd": "detect replaced tokens"}[head])
    lacks, which = _HEAD_MISSING[head]
    having = catalogue.named_by_availability([s for s in catalogue.SPECS if s.can(head)])
    raise CapabilityError(f"{spec.display_name} ({spec.key}) has {lacks}. {which}: {having}.")


def refuse_decoder(spec: ModelSpec, task: str) -> None:
    """A ``CapabilityError`` when ``spec`` is a decoder: ``task`` (e.g. "fill a mask", "pool
    sentence vectors") needs an encoder, which reads both sides of every token."""
    if spec.is_decoder:
        encoder = f" (its twin encoder: {spec.twin})" if spec.twin else ""
        raise CapabilityError(f"{spec.display_name} ({spec.key}) cannot {task}: {DECODER_REFUSAL} "
                              f"(it reads left to right and gives the next piece){encoder}.")


def load_model(spec: ModelSpec, head: str = "base", attn_implementation: str | None = None):
    """A cached ``LoadedModel``.

    spec: the model's ``ModelSpec`` (``get_spec(key)``: a request resolves its key once).
    head: "base" (the bare encoder), "mlm" (with the masked-LM head), "nsp" (BERT's
    next-sentence-prediction head), "sop" (ALBERT's sentence-order head, with its MLM head),
    "rtd" (ELECTRA's discriminator) or "clm" (a decoder's next-token head). ELECTRA's MLM head is its generator, a smaller
    model in the spec's ``mlm_subfolder``.
    attn_implementation: None (transformers' default, e.g. SDPA) or "eager", which is
    what returns attention weights.
    """
    require_head(_require_spec(spec, "load_model"), head)
    device = get_device()
    key = (spec.key, head, attn_implementation, str(device))
    return MODEL_CACHE.get(key, lambda: _load(spec, head, attn_implementation, device))


def _load(spec: ModelSpec, head: str, attn_implementation: str | None, device) -> LoadedModel:
    shared = _eager_twin(spec, head, attn_implementation, device)
    if shared is not None:
        return shared
    name, kwargs = _pretrained_args(spec)  # availability, once per load
    tokenizer = _tokenizer_for(spec, (name, dict(kwargs)))
    dtype = dtype_for(device)
    if attn_implementation:
        kwargs["attn_implementation"] = attn_implementation
    auto = {"mlm": AutoModelForMaskedLM, "nsp": AutoModelForNextSentencePrediction,
            "sop": AutoModelForPreTraining, "rtd": AutoModelForPreTraining,
            "clm": AutoModelForCausalLM}.get(head, AutoModel)
    if head == "mlm" and spec.mlm_subfolder:
        kwargs["subfolder"] = spec.mlm_subfolder
    need = _expected_bytes(spec, name, kwargs.get("subfolder", ""), dtype)
    MEMORY.check_fits(need, f"{spec.key} in {str(dtype).removeprefix('torch.')}")
    MEMORY.settle(need=need)  # room first: the old and the new model are not both resident
    try:
        with BUILD_LOCK, _quiet_load_report():
            model, info = auto.from_pretrained(
                name, dtype=dtype, trust_remote_code=False, output_loading_info=True, **kwargs
            )
        model.to(device).eval()
    except torch.OutOfMemoryError as exc:
        raise ModelUnavailableError(
            f"{spec.display_name} ({spec.key}) does not fit in the memory of {device}: "
            "choose a smaller model or free memory."
        ) from exc
    except Exception as exc:  # a corrupt folder, missing files, a bad config
        raise _load_failed(spec, exc) from exc
    # The pooler (BERT's [CLS] dense + tanh for NSP) is absent from MLM-only checkpoints and
    # the app never reads its output; any other missing weight would be random: refuse.
    missing = [k for k in info.get("missing_keys", ()) if k and "pooler." not in k]
    if missing:
        raise CapabilityError(
            f"{spec.display_name} ({spec.key}) has no trained weights for "
            f"{len(missing)} parameter(s) of its {head} model (e.g. {sorted(missing)[0]}); "
            f"it cannot be used for this."
        )
    odd = unexpected_keys_to_report(info)
    if odd:
        import logging

        logging.getLogger(__name__).warning("%s (%s): %d unexpected checkpoint weight(s) ignored, e.g. %s",
                                            spec.display_name, spec.key, len(odd), odd[0])
    nbytes = sum(t.numel() * t.element_size() for t in model.parameters())
    nbytes += sum(t.numel() * t.element_size() for t in model.buffers())
    return LoadedModel(spec, model, tokenizer, device, dtype, nbytes)


def _eager_twin(spec: ModelSpec, head: str, attn_implementation: str | None, device) -> LoadedModel | None:
    """The eager-attention model (what returns attention weights) of a checkpoint and head that
    are loaded already under transformers' default attention: the same class rebuilt around the
    same weight tensors, so a real-size model is not held twice (bert-base: 0.44 GB). None when
    there is no such model to share. Each copy still counts in full against the budget: it errs
    high, never low, when one of the two is dropped."""
    if attn_implementation != "eager":
        return None
    loaded = MODEL_CACHE.peek((spec.key, head, None, str(device)))
    if loaded is None:
        return None
    source = loaded.model
    with torch.device("meta"):
        model = type(source)._from_config(copy.deepcopy(source.config), attn_implementation="eager")
    model.load_state_dict(source.state_dict(), assign=True, strict=True)
    for name, buffer in source.named_buffers():  # those a state dict leaves out (position ids, rotary tables)
        owner, _, leaf = name.rpartition(".")
        module = model.get_submodule(owner)
        if module._buffers.get(leaf) is not None and module._buffers[leaf].is_meta:
            module._buffers[leaf] = buffer
    if any(t.is_meta for t in (*model.parameters(), *model.buffers())):
        return None  # something the copy could not share: load it from disk instead
    model.eval()
    return LoadedModel(spec, model, loaded.tokenizer, loaded.device, loaded.dtype, loaded.nbytes)


def _expected_bytes(spec: ModelSpec, name: str, subfolder: str, dtype: torch.dtype) -> int:
    """What the checkpoint's tensors take in ``dtype``; 0 where its file is not here yet."""
    file = f"{subfolder}/model.safetensors" if subfolder else "model.safetensors"
    if spec.source_kind == "hub":
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(name, file)
        path = Path(found) if isinstance(found, str) else None
    else:
        path = Path(name) / file
    itemsize = torch.empty((), dtype=dtype).element_size()
    return checkpoint_nbytes(path, itemsize) if path is not None and path.is_file() else 0


# Checkpoint weights of heads a loaded class does not have (a pre-training checkpoint read as
# a masked LM: BERT's pooler and NSP head, ALBERT's SOP head, ELECTRA's discriminator head...):
# expected, so transformers' "LOAD REPORT" about them is not printed. Missing weights are
# checked by ``_load`` itself (it refuses them); anything else unexpected is still logged.
UNUSED_HEAD_KEYS = ("pooler.", "cls.seq_relationship.", "sop_classifier.", "discriminator_predictions.",
                    "generator_predictions.", "generator_lm_head.", "cls.predictions.", "predictions.",
                    "lm_head.", "vocab_", "head.", "decoder.")


@contextlib.contextmanager
def _quiet_load_report():
    """transformers' load report silenced (it logs at WARNING on transformers.modeling_utils);
    the unexpected keys it would list are returned by ``output_loading_info`` instead.

    A filter, not a level: transformers 5.23 checks a tensor-parallel plan on every load whose
    modeling_utils logger has a level of WARNING or above (``verify_tp_plan``), and logs each
    layer "not sharded" on another logger, so raising the level printed a long warning per
    load that has nothing to do with this app (no tensor parallelism here)."""
    import logging

    report_logger = logging.getLogger("transformers.modeling_utils")

    def errors_only(record: logging.LogRecord) -> bool:  # a filter's True keeps the record
        return record.levelno >= logging.ERROR

    report_logger.addFilter(errors_only)
    try:
        yield
    finally:
        report_logger.removeFilter(errors_only)


def unexpected_keys_to_report(info: dict) -> list[str]:
    """The unexpected checkpoint keys that are not a known unused head's."""
    return sorted(k for k in info.get("unexpected_keys", ()) if not any(h in k for h in UNUSED_HEAD_KEYS))


def is_loaded(model_key: str, head: str = "base", attn_implementation: str | None = None) -> bool:
    """Is this model already in memory (no load wait)?"""
    try:
        device = str(get_device())
    except ModelUnavailableError:
        return False
    return (model_key, head, attn_implementation, device) in MODEL_CACHE.keys()
