"""Architecture facts computed from configs, and the papers' training recipes.

* ``architecture_table()``: every registry model's architecture instantiated with
  transformers **on the meta device** (shapes only: no weights, no memory), from the
  checkpoint's official ``config.json`` (``data/configs``) or the embedded model's own
  folder. Parameter counts, sizes and schemes are read off the instantiated modules and
  the config, never typed in.
* ``training_recipes()``: the papers' pre-training recipes (``data/training_recipes.json``).

Runs of one input through several models live in ``models/compare/side_by_side.py``; the forward-pass
benchmark in ``models/compare/benchmark.py``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModel, AutoModelForMaskedLM
from transformers.models.auto.tokenization_auto import (
    TOKENIZER_MAPPING_NAMES,
    tokenizer_class_from_name,
)

from ..errors import CapabilityError, ModelUnavailableError
from ..registry import catalogue
from ..runtime.loading import BUILD_LOCK

DATA = catalogue.REPO_ROOT / "data"
CONFIGS = DATA / "configs"

# How each tokenizers-library model type is called, with the marker its pieces carry.
TOKENIZER_KINDS = {
    "WordPiece": "WordPiece",  # "##" marks a piece that continues a word
    "BPE": "BPE (byte-level)",  # "Ġ" marks a piece that starts after a space
    "Unigram": "SentencePiece (Unigram)",  # "▁" marks a piece that starts a word
}


# --- configs ----------------------------------------------------------------------------


@lru_cache(maxsize=1)
def config_index() -> dict:
    """``data/configs/index.json``: registry key -> config file and its source path."""
    return json.loads((CONFIGS / "index.json").read_text(encoding="utf-8"))


def shown_path(path: Path) -> str:
    """A file's path as the page shows it: from the repository (.cache/models/...) or from
    site-packages (site-packages/<package>/...), never the server's absolute folders."""
    parts = path.parts
    if "site-packages" in parts:  # an installed package (the venv may sit inside the repository)
        return "/".join(parts[len(parts) - parts[::-1].index("site-packages") - 1:])
    try:
        return path.relative_to(catalogue.REPO_ROOT).as_posix()
    except ValueError:
        pass
    return "/".join(parts[-3:])  # elsewhere (an operator's models folder): the last folders only


def config_file(model_key: str) -> tuple[Path, str]:
    """(the config.json to read, where it comes from) for a registry key."""
    spec = catalogue.get_spec(model_key)
    if catalogue.is_operator_added(spec):
        raise CapabilityError(
            f"{model_key} was added by this server's operator: operator-added models have no "
            "stored config here, so Compare has no architecture facts or benchmark for it."
        )
    online = config_index()["online"].get(model_key)
    if online is not None:
        return CONFIGS / online["config"], f"official config.json of {online['checkpoint']} ({online['source_path']})"
    folder = catalogue.local_path(spec)
    path = folder / "config.json" if folder is not None else None
    if path is None or not path.is_file():
        raise ModelUnavailableError(
            f"{model_key}'s config is read from its installed folder ({folder}), which is "
            "missing; run `make setup` to install the embedded models."
        )
    return path, f"embedded model folder: {shown_path(path)}"


def raw_config(model_key: str) -> dict:
    """The config.json of a registry model as published (original key names)."""
    path, _ = config_file(model_key)
    return json.loads(path.read_text(encoding="utf-8"))


def load_config(model_key: str):
    """The transformers ``PretrainedConfig`` built from the checkpoint's config.json."""
    values = raw_config(model_key)
    return AutoConfig.for_model(values.pop("model_type"), **values)


# --- the architecture table -------------------------------------------------------------


@dataclass(frozen=True)
class ArchitectureFacts:
    """One model's architecture, computed from its config on the meta device."""

    model_key: str
    family: str
    model_type: str  # the config's model_type
    architecture: str  # the bare-encoder class (what AutoModel builds)
    params_total: int  # AutoModel (the bare encoder, pooler included where it has one)
    params_embedding: int  # the `embeddings` module: token, position, segment tables + norm
    params_encoder: int  # the rest of the bare encoder, pooler excepted
    params_pooler: int  # BERT/ALBERT's [CLS] pooler; 0 where there is none
    params_mlm_head: int  # AutoModelForMaskedLM's head, a tied decoder counted once (in the embedding)
    params_mlm_total: int  # the whole AutoModelForMaskedLM, tied weights counted once
    mlm_head_released: bool  # the checkpoint ships trained MLM-head weights
    layers: int
    weight_sets: int  # distinct sets of layer weights (ALBERT shares one across its layers)
    hidden: int
    heads: int
    ffn: int  # feed-forward inner size
    embedding_size: int  # the token-embedding width (smaller than hidden when factorised)
    vocab_size: int
    tokenizer_class: str
    tokenizer_kind: str  # WordPiece / BPE (byte-level) / SentencePiece (Unigram)
    tokenizer_kind_from: str  # how the kind was found
    max_context: int  # the longest input in tokens
    position_scheme: str
    activation: str
    attention_pattern: str
    config_source: str  # which config.json the facts come from

    def to_dict(self) -> dict:
        return asdict(self)


def _count(module: torch.nn.Module | None, seen: set[int] | None = None) -> int:
    """Parameters of a module, each shared tensor counted once (across calls with ``seen``)."""
    if module is None:
        return 0
    seen = set() if seen is None else seen
    total = 0
    for p in module.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            total += p.numel()
    return total


def instantiate(config, masked_lm: bool = False) -> torch.nn.Module:
    """The architecture on the meta device: every tensor has a shape and no storage."""
    auto = AutoModelForMaskedLM if masked_lm else AutoModel
    with BUILD_LOCK, torch.device("meta"):  # no other build may patch transformers meanwhile
        return auto.from_config(config)


def _is_gated(layer: torch.nn.Module, ffn: int) -> bool:
    """A GLU feed-forward: one module whose input projection is 2 x ffn wide and output reads ffn."""
    for module in layer.modules():
        linears = [m for m in module.children() if isinstance(m, torch.nn.Linear)]
        if any(m.out_features == 2 * ffn for m in linears) and any(m.in_features == ffn for m in linears):
            return True
    return False


def _first_layer(model: torch.nn.Module) -> torch.nn.Module:
    """The first transformer block, whatever the family calls its list of layers."""
    for module in model.modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) > 0:
            return module[0]
    raise ValueError(f"{type(model).__name__} has no list of layers")


_ACTIVATIONS = {"gelu": "GELU", "gelu_new": "GELU (tanh approximation)", "relu": "ReLU", "silu": "SiLU"}


def _activation(config, model: torch.nn.Module, ffn: int) -> str:
    name = next(
        (getattr(config, k) for k in ("hidden_act", "hidden_activation", "activation") if getattr(config, k, None)),
        "?",
    )
    label = _ACTIVATIONS.get(str(name), str(name))
    if _is_gated(_first_layer(model), ffn):
        return "GeGLU (gated GELU)" if label.startswith("GELU") else f"{label} (gated)"
    return label


def _position_scheme(config, model: torch.nn.Module) -> str:
    names = {name for name, _ in model.named_modules()}
    if any("rotary" in n for n in names):
        rope = getattr(config, "rope_parameters", None) or {}
        thetas = sorted({int(p["rope_theta"]) for p in rope.values() if isinstance(p, dict) and "rope_theta" in p})
        detail = f" (θ = {' / '.join(f'{t:,}' for t in thetas)}: local / global)" if len(thetas) > 1 else ""
        return "rotary (RoPE)" + detail
    if getattr(config, "relative_attention", False):
        kinds = getattr(config, "pos_att_type", None) or []
        kinds = "|".join(kinds) if isinstance(kinds, (list, tuple)) else str(kinds)
        absolute = " + absolute input" if getattr(config, "position_biased_input", True) else ""
        buckets = getattr(config, "position_buckets", -1)
        bucket = f", {buckets} log buckets" if buckets and buckets > 0 else ""
        return f"relative, disentangled ({kinds}{bucket}){absolute}"
    if getattr(config, "sinusoidal_pos_embds", False):
        return "absolute (sinusoidal)"
    if getattr(getattr(model, "embeddings", None), "position_embeddings", None) is not None:
        return "absolute (learned)"
    return "none found"


def _attention_pattern(config) -> str:
    types = list(getattr(config, "layer_types", None) or [])
    if types and any(t != "full_attention" for t in types):
        full = [i for i, t in enumerate(types) if t == "full_attention"]
        window = getattr(config, "local_attention", None)
        local = f"a {window}-token window (±{window // 2})" if window else "a sliding window"
        return (
            f"local/global alternation: global (full) attention in {len(full)} of {len(types)} "
            f"layers ({', '.join(map(str, full))}); the other layers see {local}"
        )
    return "full (every token attends to every token)"


def _max_context(config, model: torch.nn.Module) -> int:
    positions = int(getattr(config, "max_position_embeddings", 0) or 0)
    padding_idx = getattr(getattr(model, "embeddings", None), "padding_idx", None)
    if padding_idx is not None and getattr(config, "model_type", "") in ("roberta",):
        # RoBERTa's position ids start after the padding index: 514 slots give 512 tokens.
        return positions - padding_idx - 1
    return positions


def _tokenizer_kind(model_key: str, config) -> tuple[str, str, str]:
    """(tokenizer class, kind, how it was found).

    Embedded models: the ``model.type`` of the tokenizer.json in their folder. Online
    models: the tokenizers-library model that transformers' tokenizer class for this
    ``model_type`` builds (e.g. BertTokenizer.model is WordPiece); when that class is the
    generic backend (ModernBERT), the checkpoint's tokenizer.json type recorded in
    data/configs/index.json.
    """
    spec = catalogue.get_spec(model_key)
    folder = catalogue.local_path(spec)
    if folder is not None and (folder / "tokenizer.json").is_file():
        tok = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
        tok_config = folder / "tokenizer_config.json"
        cls = json.loads(tok_config.read_text())["tokenizer_class"] if tok_config.is_file() else "?"
        kind = tok["model"]["type"]
        return cls, TOKENIZER_KINDS.get(kind, kind), "tokenizer.json in the model folder (model.type)"
    cls_name = TOKENIZER_MAPPING_NAMES.get(config.model_type) or "?"
    cls = tokenizer_class_from_name(cls_name) if cls_name != "?" else None
    model = getattr(cls, "model", None)
    if model is not None:
        how = f"transformers maps model_type {config.model_type!r} to {cls_name}, a {model.__name__} tokenizer"
        return cls_name, TOKENIZER_KINDS.get(model.__name__, model.__name__), how
    recorded = config_index()["online"].get(model_key, {}).get("tokenizer_json_model")
    if recorded:
        return (
            "PreTrainedTokenizerFast",
            TOKENIZER_KINDS.get(recorded, recorded),
            "the checkpoint's tokenizer.json model type (recorded in data/configs/index.json)",
        )
    return cls_name, "unknown", "no tokenizer information"


def architecture_facts(model_key: str) -> ArchitectureFacts:
    """The facts of one registry model, computed from its config on the meta device."""
    spec = catalogue.get_spec(model_key)
    if spec.is_decoder:
        raise CapabilityError(f"{model_key} is a decoder: the architecture table and the speed bench compare "
                              "encoders (its model card gives its shape).")
    return _architecture_facts(model_key)


@lru_cache(maxsize=None)
def _architecture_facts(model_key: str) -> ArchitectureFacts:
    spec = catalogue.get_spec(model_key)
    _, source = config_file(model_key)
    config = load_config(model_key)
    base = instantiate(config)
    mlm = instantiate(config, masked_lm=True)

    seen: set[int] = set()
    embeddings = getattr(base, "embeddings", None)
    embedding = _count(embeddings if embeddings is not None else base.get_input_embeddings(), seen)
    pooler = _count(getattr(base, "pooler", None), seen)
    encoder = _count(base, seen)  # what is left: layers, norms, projections
    seen_mlm: set[int] = set()
    inner = _count(mlm.base_model, seen_mlm)
    head = _count(mlm, seen_mlm)  # the head's own parameters; a tied decoder is already seen

    ffn = int(getattr(config, "intermediate_size", None) or getattr(config, "hidden_dim"))
    layers = int(config.num_hidden_layers)
    tok_class, tok_kind, tok_how = _tokenizer_kind(model_key, config)
    return ArchitectureFacts(
        model_key=model_key,
        family=spec.family,
        model_type=config.model_type,
        architecture=type(base).__name__,
        params_total=embedding + pooler + encoder,
        params_embedding=embedding,
        params_encoder=encoder,
        params_pooler=pooler,
        params_mlm_head=head,
        params_mlm_total=inner + head,
        mlm_head_released=spec.can("mlm"),
        layers=layers,
        weight_sets=int(getattr(config, "num_hidden_groups", layers)),
        hidden=int(config.hidden_size),
        heads=int(config.num_attention_heads),
        ffn=ffn,
        embedding_size=int(base.get_input_embeddings().weight.shape[-1]),
        vocab_size=int(config.vocab_size),
        tokenizer_class=tok_class,
        tokenizer_kind=tok_kind,
        tokenizer_kind_from=tok_how,
        max_context=_max_context(config, base),
        position_scheme=_position_scheme(config, base),
        activation=_activation(config, base, ffn),
        attention_pattern=_attention_pattern(config),
        config_source=source,
    )


def architecture_table() -> tuple[ArchitectureFacts, ...]:
    """One ``ArchitectureFacts`` per registry model, in registry order.

    Works offline: only configs are read, and the architectures are built on the meta
    device (no weights are downloaded, loaded or allocated). An embedded model whose
    folder is not installed has no config to read and is left out.
    """
    facts = []
    for spec in catalogue.SPECS:
        if spec.is_decoder:  # the table compares encoders; a decoder's card gives its shape
            continue
        try:
            facts.append(architecture_facts(spec.key))
        except ModelUnavailableError:  # an embedded model not installed: nothing to read
            continue
    return tuple(facts)


# --- training recipes -------------------------------------------------------------------


@dataclass(frozen=True)
class TrainingRecipe:
    """How a family was pre-trained, as its paper reports it (None: not transcribed)."""

    model: str
    applies_to: tuple[str, ...]  # registry keys
    paper_title: str
    paper_authors: str
    paper_year: int
    arxiv: str
    data: str
    data_size: str | None
    objective: str
    nsp: str
    masking: str | None
    masking_rate: str | None
    distillation: str
    batch_size: str | None
    steps: str | None
    sequence_length: str | None
    notes: str

    @property
    def citation(self) -> str:
        first = self.paper_authors.split(",")[0].strip()
        others = " et al." if "," in self.paper_authors else ""
        return f"{first}{others} ({self.paper_year}). {self.paper_title}. arXiv:{self.arxiv}"


def training_recipes() -> tuple[TrainingRecipe, ...]:
    """The pre-training recipes table, one row per paper (``data/training_recipes.json``)."""
    rows = json.loads((DATA / "training_recipes.json").read_text(encoding="utf-8"))["recipes"]
    return tuple(
        TrainingRecipe(
            model=r["model"],
            applies_to=tuple(r["applies_to"]),
            paper_title=r["paper"]["title"],
            paper_authors=r["paper"]["authors"],
            paper_year=int(r["paper"]["year"]),
            arxiv=r["paper"]["arxiv"],
            **{k: r[k] for k in (
                "data", "data_size", "objective", "nsp", "masking", "masking_rate",
                "distillation", "batch_size", "steps", "sequence_length", "notes",
            )},
        )
        for r in rows
    )
