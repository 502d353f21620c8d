"""ModelSpec: one checkpoint of the catalogue and what it can do."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ..errors import InputError

# What a model can do, one word each: the loader's heads ("mlm", "nsp", "sop", "rtd") and
# every tab's choice of models use these words and ``ModelSpec.can``, nothing else.
#   any: every model; mlm: a trained masked-LM head; nsp / sop: BERT's next-sentence or
#   ALBERT's sentence-order head; pair: either (which one: ``ModelSpec.pair_head``); rtd:
#   ELECTRA's replaced-token detector; attention: returns attention weights; embeddings:
#   trained to give sentence vectors; causal: takes a causal mask (``models.mlm.causal``);
#   clm: a decoder's trained next-token head (``next_token``), its attention triangular.
CAPABILITIES = ("any", "mlm", "nsp", "sop", "pair", "rtd", "attention", "embeddings", "causal", "clm")
# Families whose attention takes a ready 4-D mask, so a causal one can be imposed (DeBERTa's
# disentangled attention builds its own from the padding mask: not among them).
CAUSAL_FAMILIES = frozenset({"bert", "roberta", "electra", "distilbert", "albert", "modernbert"})


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
    has_clm_head: bool = False  # a decoder: reads left to right, ships a trained next-token head
    twin: str = ""  # the matched model of the other kind (an encoder's decoder, a decoder's encoder)
    generator: str = ""  # ELECTRA: the key whose MLM head (its generator) makes the swaps, when not its own
    stand_in: bool = False  # random weights in a Hub model's real shape (scripts/standins.py), found cached
    # What is true on this machine now: filled by ``list_models`` (None in the bare registry).
    available: bool | None = None  # can be loaded now
    availability: str = ""  # why (not) available, in one line
    default: bool = False  # the app's default fill-mask model

    @property
    def pair_head(self) -> str:
        """The sentence-pair head it ships: "nsp" (BERT), "sop" (ALBERT), or "" for none.
        Decided here once: a checkpoint with both is read through its NSP head."""
        return "nsp" if self.has_nsp_head else "sop" if self.has_sop_head else ""

    @property
    def is_decoder(self) -> bool:
        """A left-to-right model (a storyteller): ``next_token``, never fill-mask or pooling."""
        return self.has_clm_head

    def can(self, capability: str) -> bool:
        """Does this model have ``capability``, one of ``CAPABILITIES``?"""
        flags = {
            "any": True, "mlm": self.has_mlm_head, "nsp": self.has_nsp_head, "sop": self.has_sop_head,
            "pair": bool(self.pair_head), "rtd": self.has_rtd_head, "attention": self.returns_attention,
            "embeddings": self.sentence_embeddings, "causal": self.family in CAUSAL_FAMILIES,
            "clm": self.has_clm_head,
        }
        if not isinstance(capability, str) or capability not in flags:
            raise InputError(f"Unknown capability {capability!r}; choose one of {', '.join(CAPABILITIES)}.")
        return flags[capability]

    def to_dict(self) -> dict:
        return asdict(self)
