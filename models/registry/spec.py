"""ModelSpec: one checkpoint of the catalogue and what it can do."""

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
