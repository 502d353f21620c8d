"""Frozen dataclasses returned by the core: plain Python values, JSON-friendly."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class ModelSpec:
    """One checkpoint of the registry, what it can do, and (from ``list_models``) whether it
    can run on this machine now. The one contract: tabs choose models by these flags."""

    key: str  # short, stable registry key, e.g. "bert-base"
    display_name: str
    family: str  # bert, roberta, distilbert, albert, deberta-v2, modernbert, electra
    source: str  # a Hugging Face Hub id, or a local folder (see ``source_kind``)
    source_kind: str  # "hub", "cache" (setup's model folder), "package" or "local"
    mask_token: str  # the model's own mask token, e.g. "[MASK]" or "<mask>"
    has_mlm_head: bool  # the checkpoint ships a trained masked-LM head
    returns_attention: bool  # can return attention weights (with eager attention)
    provenance: str  # where the weights come from, in one honest line
    embedded: bool = False  # installed by the project's setup, works offline
    has_nsp_head: bool = False  # ships BERT's next-sentence-prediction head
    has_sop_head: bool = False  # ships ALBERT's sentence-order-prediction head
    has_rtd_head: bool = False  # ships ELECTRA's replaced-token-detection discriminator
    sentence_embeddings: bool = False  # trained to give sentence vectors (e.g. contrastively)
    miniature: bool = False  # one of the mini zoo: trained by this project, not published
    mlm_subfolder: str = ""  # where the MLM head lives when not in the main folder (ELECTRA's generator)
    # What is true on this machine now: filled by ``list_models`` (None in the bare registry).
    available: bool | None = None  # can be loaded now
    availability: str = ""  # why (not) available, in one line
    default: bool = False  # the app's default fill-mask model

    def to_dict(self) -> dict:
        return asdict(self)


# Kept for notebooks written against the earlier API: the same class, not a copy of it.
ModelInfo = ModelSpec


@dataclass(frozen=True)
class TokenizationResult:
    """How a model's tokenizer splits a text (or a text pair)."""

    model_key: str
    tokens: tuple[str, ...]
    ids: tuple[int, ...]
    special_tokens_mask: tuple[int, ...]  # 1 for [CLS], [SEP], <s>, ...
    token_type_ids: tuple[int, ...]  # segment ids: 0 for text, 1 for text_pair (BERT-style)
    offsets: tuple[tuple[int, int], ...]  # character span of each token in its own text

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Prediction:
    """One candidate for a masked position."""

    token: str  # decoded text of the token, as the transformers pipeline shows it
    token_id: int
    score: float  # softmax probability over the whole vocabulary
    raw_token: str  # the vocabulary entry, e.g. "##ing", "Ġcat", "▁cat"


@dataclass(frozen=True)
class MaskPrediction:
    """The predictions at one mask, in the order the masks appear in the text."""

    index: int  # 0 for the first mask of the text, 1 for the second, ...
    position: int  # the mask's token position in ``FillMaskResult.tokens``
    predictions: tuple[Prediction, ...]  # sorted by score, highest first


@dataclass(frozen=True)
class FillMaskResult:
    """Fill-mask output: one entry per mask, each with its top-k."""

    model_key: str
    text: str  # the text as the model read it (mask spellings normalised)
    tokens: tuple[str, ...]
    masks: tuple[MaskPrediction, ...]
    filled_text: str  # the user's text with each mask replaced by its top prediction
    causal: bool = False  # read through a causal mask (left context only)

    def to_records(self) -> list[dict]:
        """One flat record per (mask, rank): handy for pandas and JSON."""
        return [
            {
                "mask": m.index + 1,
                "position": m.position,
                "rank": rank,
                "token": p.token,
                "token_id": p.token_id,
                "raw_token": p.raw_token,
                "score": p.score,
            }
            for m in self.masks
            for rank, p in enumerate(m.predictions, start=1)
        ]

    def to_dict(self) -> dict:
        return asdict(self)
