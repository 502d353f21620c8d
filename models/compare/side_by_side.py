"""One input read by many models: ``compare_fill_mask`` and ``compare_tokens``.

Models that cannot run here are listed with the reason and the rest still run. The
architecture facts and training recipes live in ``models/compare/architecture.py``; the
forward-pass benchmark in ``models/compare/benchmark.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import CapabilityError, InputError, ModelUnavailableError
from ..mlm.fill_mask import MASK_PATTERN, MAX_MASKS, MAX_TOP_K, fill_mask, with_own_mask
from ..mlm.results import FillMaskResult
from ..registry import catalogue
from ..runtime.loading import load_tokenizer
from ..registry.spec import ModelSpec
from ..runtime.tokenization import tokenize_with
from ..validation import check_int, check_text
from .architecture import architecture_facts

PIECE_MARKERS = ("##", "Ġ", "▁")  # word markers: WordPiece continuation, BPE and SentencePiece word start


# --- one input, several models ----------------------------------------------------------


@dataclass(frozen=True)
class SkippedModel:
    """A chosen model that could not take part, and why."""

    model_key: str
    reason: str


@dataclass(frozen=True)
class MaskAgreement:
    """Where the models' top-k agree at one mask (words normalised: no ##/Ġ/▁, lower case)."""

    index: int  # 0 for the first mask of the text
    shared: tuple[str, ...]  # in every model's top-k, in the first model's order
    votes: tuple[tuple[str, int], ...]  # (word, how many models list it), most first
    top1_agree: bool  # every model's first guess is the same word


@dataclass(frozen=True)
class CompareFillMaskResult:
    """The same masked text through several models."""

    text: str  # the user's text
    model_texts: tuple[tuple[str, str], ...]  # (model key, the text with its own mask token)
    results: tuple[FillMaskResult, ...]  # one per model that ran, in the order asked
    agreement: tuple[MaskAgreement, ...]  # one per mask
    skipped: tuple[SkippedModel, ...]


@dataclass(frozen=True)
class ModelPieces:
    """One model's tokenisation of the text."""

    model_key: str
    tokenizer_kind: str
    tokens: tuple[str, ...]  # special tokens included, as the model reads them
    pieces: tuple[str, ...]  # the text's own pieces (special tokens left out)
    piece_count: int
    continuation_count: int  # pieces that continue a word: sum(continues)
    continues: tuple[bool, ...]  # per piece: does it continue a word (pieces_that_continue)


@dataclass(frozen=True)
class CompareTokensResult:
    text: str
    models: tuple[ModelPieces, ...]
    skipped: tuple[SkippedModel, ...]


def normalise_piece(piece: str) -> str:
    """A vocabulary entry as a plain word: word markers (##, Ġ, ▁) removed, lower-cased."""
    for marker in PIECE_MARKERS:
        if piece.startswith(marker):
            piece = piece[len(marker):]
            break
    return piece.strip().lower()


MAX_COMPARE_MODELS = len(catalogue.SPECS)  # one call runs each model in turn: bound the work


def check_model_keys(model_keys) -> list[str]:
    """A non-empty list of known registry keys, duplicates dropped (order kept)."""
    if isinstance(model_keys, str):
        model_keys = [model_keys]
    if not model_keys:
        raise InputError("Choose at least one model to compare.")
    if not isinstance(model_keys, (list, tuple)):
        raise InputError(f"model_keys must be a list of registry keys, not {type(model_keys).__name__}.")
    keys = list(dict.fromkeys(model_keys))
    if len(keys) > MAX_COMPARE_MODELS:
        raise InputError(f"At most {MAX_COMPARE_MODELS} models per comparison; you chose {len(keys)}.")
    return keys


def _runnable(specs: list[ModelSpec], need_mlm: bool) -> tuple[list[ModelSpec], list[SkippedModel]]:
    """Split the models into those that can run here and those that can't (with why)."""
    ok, skipped = [], []
    for spec in specs:
        if need_mlm and not spec.can("mlm"):
            skipped.append(SkippedModel(spec.key, f"{spec.display_name} has no trained masked-LM head"))
            continue
        available, why = catalogue.availability(spec)
        if available:
            ok.append(spec)
        else:
            skipped.append(SkippedModel(spec.key, f"not available here: {why}"))
    return ok, skipped


def _none_ran(skipped: list[SkippedModel]) -> ModelUnavailableError:
    reasons = "; ".join(f"{s.model_key}: {s.reason}" for s in skipped)
    return ModelUnavailableError(f"None of the chosen models can run on this machine. {reasons}")


def _run_each(specs: list[ModelSpec], skipped: list[SkippedModel], work) -> list:
    """``work(spec)`` for each model; a model that fails to load is skipped, not fatal."""
    out = []
    for spec in specs:
        try:
            out.append(work(spec))
        except (ModelUnavailableError, CapabilityError) as exc:
            skipped.append(SkippedModel(spec.key, str(exc)))
    if not out:
        raise _none_ran(skipped)
    return out


def _agreement(results: list[FillMaskResult]) -> tuple[MaskAgreement, ...]:
    out = []
    for index in range(len(results[0].masks)):
        words = [[normalise_piece(p.raw_token) for p in r.masks[index].predictions] for r in results]
        counts: dict[str, int] = {}
        for model_words in words:
            for word in dict.fromkeys(model_words):
                counts[word] = counts.get(word, 0) + 1
        shared = tuple(w for w in dict.fromkeys(words[0]) if counts[w] == len(results))
        votes = tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
        out.append(MaskAgreement(index, shared, votes, len({w[0] for w in words}) == 1))
    return tuple(out)


def compare_fill_mask(model_keys, text: str, top_k: int = 5) -> CompareFillMaskResult:
    """Each chosen model's top-k at every mask of one text, and where they agree.

    Write each mask once as [MASK] or <mask>; each model reads its own mask token. Models
    with no MLM head or not available here are listed in ``skipped`` with the reason; the
    comparison runs on the rest (a ``ModelUnavailableError`` if none can run).
    """
    specs = [catalogue.get_spec(key) for key in check_model_keys(model_keys)]
    top_k = check_int(top_k, "top_k", 1, MAX_TOP_K)
    text = check_text(text)
    masks = len(MASK_PATTERN.findall(text))
    if masks == 0:
        raise InputError(
            "Your text has no mask. Write [MASK] (or <mask>) where the models should guess a word."
        )
    if masks > MAX_MASKS:
        raise InputError(f"Your text has {masks} masks; the limit is {MAX_MASKS}. Remove some.")
    ok, skipped = _runnable(specs, need_mlm=True)
    if not ok:
        raise _none_ran(skipped)
    results = _run_each(ok, skipped, lambda spec: fill_mask(spec.key, text, top_k))
    return CompareFillMaskResult(
        text=text,
        model_texts=tuple((r.model_key, r.text) for r in results),
        results=tuple(results),
        agreement=_agreement(results),
        skipped=tuple(skipped),
    )


def pieces_that_continue(text: str, spans) -> tuple[bool, ...]:
    """For each piece's character span in ``text``: does it continue a word, i.e. start with a
    letter or digit right after one? One rule for every tokenizer, read from the text rather
    than from the markers, which count punctuation differently: "sat." is ``sat`` ``.`` in
    WordPiece (no ##: a word start) but ``Ġsat`` ``.`` in byte-level BPE (no Ġ: would continue)."""
    out = []
    for start, end in spans:
        while start < end and text[start].isspace():  # a span that holds the space before it
            start += 1
        out.append(0 < start < end and text[start].isalnum() and text[start - 1].isalnum())
    return tuple(out)


def _pieces(spec: ModelSpec, text: str) -> ModelPieces:
    """The model's pieces of ``text`` as it reads it: [MASK] and <mask> as its own mask token, as
    fill-mask writes them (one piece, not the other spelling's letters)."""
    text = with_own_mask(text, load_tokenizer(spec).mask_token)
    tokenized = tokenize_with(spec, text)
    kind = architecture_facts(spec).tokenizer_kind
    own = [k for k, special in enumerate(tokenized.special_tokens_mask) if not special]
    pieces = tuple(tokenized.tokens[k] for k in own)
    continues = pieces_that_continue(text, [tokenized.offsets[k] for k in own])
    return ModelPieces(
        model_key=spec.key,
        tokenizer_kind=kind,
        tokens=tokenized.tokens,
        pieces=pieces,
        piece_count=len(pieces),
        continuation_count=sum(continues),
        continues=continues,
    )


def compare_tokens(model_keys, text: str) -> CompareTokensResult:
    """Each chosen model's pieces for the same text, with piece counts.

    Each model reads [MASK] and <mask> as its own mask token, as fill-mask does. Tokenizers
    come with the model files: models not available here are listed in ``skipped`` with the
    reason.
    """
    specs = [catalogue.get_spec(key) for key in check_model_keys(model_keys)]
    text = check_text(text)
    ok, skipped = _runnable(specs, need_mlm=False)
    if not ok:
        raise _none_ran(skipped)
    models = _run_each(ok, skipped, lambda spec: _pieces(spec, text))
    return CompareTokensResult(text=text, models=tuple(models), skipped=tuple(skipped))
