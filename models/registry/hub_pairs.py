"""Matched encoder/decoder pairs on the Hugging Face Hub: one data set, recipe and shape, two
objectives; each spec names the other as its twin."""

from __future__ import annotations

from .spec import ModelSpec

ETTIN_SIZES = ("17m", "150m")


def ettin_pair(size: str) -> tuple[ModelSpec, ModelSpec]:
    """Ettin's encoder and decoder of one size (Weller et al. 2025): the same data, shape and
    recipe, one trained on masked LM, the other on next-token prediction; each names the other."""
    enc, dec = f"ettin-encoder-{size}", f"ettin-decoder-{size}"
    paper = ("JHU CLSP's Ettin (Weller et al. 2025): an encoder and a decoder trained on the same "
             "data with the same recipe and shape, from the Hugging Face Hub")
    return (
        ModelSpec(key=enc, display_name=f"Ettin encoder {size}", family="modernbert", source=f"jhu-clsp/{enc}",
                  source_kind="hub", mask_token="[MASK]", has_mlm_head=True, returns_attention=True,
                  provenance=f"{paper}; the encoder (ModernBertForMaskedLM) of the pair, its twin {dec}.",
                  twin=dec),
        ModelSpec(key=dec, display_name=f"Ettin decoder {size}", family="modernbert-decoder",
                  source=f"jhu-clsp/{dec}", source_kind="hub", mask_token="", has_mlm_head=False,
                  returns_attention=True, has_clm_head=True,
                  provenance=f"{paper}; the decoder (ModernBertDecoderForCausalLM) of the pair, its twin {enc}.",
                  twin=enc),
    )
