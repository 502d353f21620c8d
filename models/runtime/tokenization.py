"""How a model's tokenizer cuts a text into pieces."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ..registry import catalogue
from ..registry.spec import ModelSpec
from ..validation import check_text
from .loading import load_tokenizer


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


def tokenize(model_key: str, text: str, text_pair: str | None = None) -> TokenizationResult:
    """Tokens, ids, special-token mask, segment ids and character offsets of a text.

    With ``text_pair`` the two texts are joined in the model's own pair format
    ([CLS] A [SEP] B [SEP] for BERT, <s> A </s></s> B </s> for RoBERTa); offsets then
    refer to each token's own text.
    """
    return tokenize_with(catalogue.get_spec(model_key), text, text_pair)


def tokenize_with(spec: ModelSpec, text: str, text_pair: str | None = None) -> TokenizationResult:
    """``tokenize`` for a resolved spec."""
    text = check_text(text)
    if text_pair is not None:
        text_pair = check_text(text_pair, what="second text")
    tokenizer = load_tokenizer(spec)
    enc = tokenizer(
        text,
        text_pair,
        truncation=False,
        return_offsets_mapping=True,
        return_special_tokens_mask=True,
        return_token_type_ids=True,
        verbose=False,
    )
    ids = tuple(int(i) for i in enc["input_ids"])
    return TokenizationResult(
        model_key=spec.key,
        tokens=tuple(tokenizer.convert_ids_to_tokens(list(ids))),
        ids=ids,
        special_tokens_mask=tuple(int(m) for m in enc["special_tokens_mask"]),
        token_type_ids=tuple(int(t) for t in enc["token_type_ids"]),
        offsets=tuple((int(a), int(b)) for a, b in enc["offset_mapping"]),
    )
