"""Fill-mask results: frozen dataclasses of plain Python values, JSON-friendly."""

from __future__ import annotations

from dataclasses import asdict, dataclass


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
