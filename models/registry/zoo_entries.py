"""The mini zoo: seven encoder families trained by this project under one budget, and the
decoder twin of one of them (its storyteller, beside the zoo rather than in it).

Light on purpose (no torch import): the registry builds its specs from here, and
``zoo_comparison`` reads the records the training script wrote next to the weights
(``weights/zoo/<key>/record.json``, written by ``python -m scripts.zoo``: docs/zoo.md).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from .spec import ModelSpec

# Where the trained miniatures live: weights/zoo in the repository (what the training script
# writes), or ENCODER_LAB_ZOO_DIR (the test suite points it at a tiny zoo it trains itself).
SHIPPED_ZOO_DIR = Path(__file__).resolve().parents[2] / "weights" / "zoo"
ZOO_DIR = Path(os.environ.get("ENCODER_LAB_ZOO_DIR") or SHIPPED_ZOO_DIR)

# key -> (family, mask token, the family's idea in miniature, capability flags)
_ZOO: dict[str, tuple[str, str, str, dict]] = {
    "mini-bert": ("bert", "[MASK]", "BertForPreTraining: masked LM + next-sentence prediction, "
                  "static masking (each example's masks drawn once), WordPiece", {"has_nsp_head": True}),
    "mini-roberta": ("roberta", "<mask>", "RobertaForMaskedLM: dynamic masking, no NSP, inputs "
                     "packed with full consecutive sentences, byte-level BPE", {}),
    "mini-distilbert": ("distilbert", "[MASK]", "DistilBertForMaskedLM: 2 layers initialised from "
                        "every other layer of mini-bert, trained with the triple loss (soft targets "
                        "from mini-bert, MLM, hidden-state cosine), WordPiece", {}),
    "mini-albert": ("albert", "[MASK]", "AlbertForPreTraining: factorised embedding (96), one "
                    "layer shared by all 4, masked LM + sentence-order prediction, Unigram "
                    "(SentencePiece-style) vocabulary", {"has_sop_head": True}),
    "mini-electra": ("electra", "[MASK]", "ElectraForPreTraining discriminator trained jointly with "
                     "an ElectraForMaskedLM generator as wide as itself (shared embeddings; the narrower "
                     "ones tried stayed on the plateau): replaced-token detection; fill-mask uses the "
                     "generator, WordPiece",
                     {"has_rtd_head": True, "mlm_subfolder": "generator"}),
    "mini-deberta": ("deberta-v2", "[MASK]", "DebertaV2ForMaskedLM: disentangled attention with "
                     "relative positions (content-to-position and position-to-content), masked-LM "
                     "objective as DeBERTa-v2 (not v3's replaced-token detection), Unigram vocabulary", {}),
    "mini-modernbert": ("modernbert", "[MASK]", "ModernBertForMaskedLM: rotary positions, GeGLU, "
                        "global attention in layers 0 and 2 and a 32-token local window in layers 1 "
                        "and 3 (counting from 0, as the views do), 30 % masking, byte-level BPE", {}),
}
ZOO_KEYS: tuple[str, ...] = tuple(_ZOO)

# The zoo's storyteller: a decoder beside the encoder families (not one of ZOO_KEYS), trained
# by the same script on next-token prediction; key -> (family, its twin encoder, its recipe)
_DECODERS: dict[str, tuple[str, str, str]] = {
    "mini-decoder": ("modernbert-decoder", "mini-modernbert",
                     "ModernBertDecoderForCausalLM: mini-modernbert's shape, tokenizer, corpus, seed and token "
                     "budget, trained on next-token prediction (each piece from the pieces before it); "
                     "triangular attention, its local layers seeing the 15 tokens before each one"),
}
DECODER_KEYS: tuple[str, ...] = tuple(_DECODERS)
TWINS = {enc: dec for dec, (_, enc, _) in _DECODERS.items()}  # encoder key -> its decoder twin

# Zoo models trained on past the shared budget for the views of one head (not ZOO_KEYS: Compare
# keeps the shared-budget model they start from); key -> (the zoo model it starts from, its head, its recipe)
_PAST_BUDGET: dict[str, tuple[str, str, str]] = {
    "mini-electra-detector": ("mini-electra", "rtd", "mini-electra's discriminator trained on past the shared "
                              "budget, its generator frozen, on ELECTRA's corruption and on single-word swaps "
                              "(`python -m scripts.zoo detector`); its swaps are mini-electra's generator's"),
    "mini-bert-nsp": ("mini-bert", "nsp", "mini-bert's encoder and NSP head trained on past the shared budget on "
                      "NSP alone, on pairs of running text whose negative B is another place in the same source "
                      "(`python -m scripts.zoo nsp`); no masked-LM head of its own"),
}
PAST_BUDGET_KEYS: tuple[str, ...] = tuple(_PAST_BUDGET)


def recipe_of(key: str) -> str:
    """The family's idea in miniature, one line (for cards and tables)."""
    return _ZOO[key][2] if key in _ZOO else _DECODERS[key][2] if key in _DECODERS else _PAST_BUDGET[key][2]


def zoo_folder(key: str) -> Path:
    return ZOO_DIR / key


def _record(key: str) -> dict | None:
    try:
        return json.loads((zoo_folder(key) / "record.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _provenance(key: str, idea: str) -> str:
    record = _record(key)
    if record is None:
        return (f"Miniature trained by this project, not the published checkpoint: {idea}; not "
                "trained on this checkout yet (docs/zoo.md: python -m scripts.zoo search, then install).")
    shape = _shipped_shape(key) or record["config"]["shape"]
    amount = (f"{record['tokens']:,} training tokens, {record['steps']:,} steps, "
              f"{record['wall_minutes']:.0f} minutes on {record['device'].upper()}")
    start = ("initialised from its teacher as above" if key in _ZOO and _ZOO[key][0] == "distilbert"
             else "trained from random init")
    return (f"Miniature trained by this project, not the published checkpoint: {idea}; "
            f"{shape['layers']} layers, {shape['hidden']} wide, {shape['heads']} heads, "
            f"{shape['vocab']:,}-token vocabulary, {start} on the project's "
            f"public-domain / permissive English corpus ({amount}). See its MODEL_CARD.md.")


def _shipped_shape(key: str) -> dict | None:
    """Layers, width, heads and vocabulary as the shipped config.json has them (DistilBERT has
    half its teacher's layers, which the record's shared shape does not say)."""
    try:
        config = json.loads((zoo_folder(key) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    names = {"layers": ("num_hidden_layers", "n_layers"), "hidden": ("hidden_size", "dim"),
             "heads": ("num_attention_heads", "n_heads"), "vocab": ("vocab_size",)}
    shape = {field: next((config[n] for n in options if n in config), None) for field, options in names.items()}
    return shape if None not in shape.values() else None


def zoo_specs() -> tuple[ModelSpec, ...]:
    """The registry entries of the mini zoo and its decoder (available once their folders are present)."""
    out = []
    for key, (family, mask, idea, flags) in _ZOO.items():
        out.append(ModelSpec(
            key=key,
            display_name=f"{key} (miniature {family}, trained here)",
            family=family,
            source=str(zoo_folder(key)),
            source_kind="local",
            mask_token=mask,
            has_mlm_head=True,
            returns_attention=True,
            provenance=_provenance(key, idea),
            embedded=True,
            miniature=True,
            twin=TWINS.get(key, ""),
            **flags,
        ))
    for key, (start, head, idea) in _PAST_BUDGET.items():
        record, family = _record(key) or {}, _ZOO[start][0]
        amount = (f"{record['steps']:,} steps, "
                  + (f"{record['tokens']:,} tokens" if "tokens" in record else f"{record['pairs']:,} pairs")
                  + f", {record['wall_minutes']:.0f} minutes on CPU" if record
                  else "not trained on this checkout (docs/pretraining-heads.md)")
        out.append(ModelSpec(
            key=key, display_name=f"{key} (miniature {family}, {start}'s {head.upper()} head trained past the budget)",
            family=family, source=str(zoo_folder(key)), source_kind="local", mask_token=_ZOO[start][1],
            has_mlm_head=False, returns_attention=True, embedded=True, miniature=True,
            has_rtd_head=head == "rtd", has_nsp_head=head == "nsp", generator=start if head == "rtd" else "",
            provenance=f"Trained by this project, not a published checkpoint: {idea} ({amount}). Not one of the "
            f"zoo's shared-budget runs: Compare shows {start}. See its MODEL_CARD.md.",
        ))
    for key, (family, twin, idea) in _DECODERS.items():
        out.append(ModelSpec(
            key=key, display_name=f"{key} (miniature decoder, {twin}'s twin, trained here)", family=family,
            source=str(zoo_folder(key)), source_kind="local", mask_token="", has_mlm_head=False,
            returns_attention=True, provenance=_provenance(key, idea), embedded=True, miniature=True,
            has_clm_head=True, twin=twin,
        ))
    return tuple(out)


@dataclass(frozen=True)
class ZooEntry:
    """One family's run under the shared budget, as recorded by the training script."""

    key: str
    family: str
    idea: str  # what this family's recipe changes, in miniature
    tokenizer_kind: str  # wordpiece, bytelevel-bpe, modernbert-bpe, unigram-albert, unigram-deberta
    tokens: int  # training tokens seen (non-padding inputs of the trained model)
    steps: int
    wall_minutes: float
    tokens_per_s: float  # training tokens / wall seconds of the run
    cpu_minutes: float  # process CPU time of the training run (all threads of rank 0)
    flops: float  # training FLOPs: torch's FlopCounterMode on one real step (forward + backward), times tokens
    parameters: int  # the shipped model (ELECTRA: discriminator + generator)
    score_name: str
    score: float  # held-out whole-word accuracy (fraction)
    scored_model: str  # whose score: "the model", or ELECTRA's "its 64-wide generator" (fills the masks)
    everyday_top5: float  # everyday cloze: a top-5 token is an acceptable answer (fraction)
    pair_accuracy: float | None  # NSP (mini-bert) or SOP (mini-albert) on held-out pairs
    pair_majority: float | None  # the held-out pairs' majority class share (the baseline to beat)
    curve: tuple[tuple[int, float, float], ...]  # (tokens, whole-word accuracy, train loss)
    piece_loss: float | None = None  # held-out mean loss per masked piece (nats)
    baseline_score: float | None = None  # the word-frequency (unigram) predictor's whole-word top-1, same words
    baseline_piece_loss: float | None = None  # its loss per masked piece (the plateau a model starts on)
    tuning: str = ""  # the tuning search's choice ("lr 0.001, dropout 0"), empty when the run had none
    tuning_search: str = ""  # the search itself: its grid, tokens per trial, and how the trials ran
    trained_on: str = ""  # where: the GPU's name, or "CPU"
    rtd_auc: float | None = None  # ELECTRA: ROC AUC of P(replaced) on held-out generator-corrupted text
    # SOP: a bag-of-words order model's accuracy on the same held-out pairs (`python -m scripts.zoo heads sop`):
    # how much order the pairs show to a model that compares the two segments' words
    pair_reference: float | None = None
    locality_start: bool = False  # its learnt absolute table began with the locality start (models/zoo/locality.py)
    # the learning curve's words: the tuning split (the held-out file's last 400 sentences) when the run had a
    # tuning search, else the first held-out sentences; ``score`` is on the other held-out words
    curve_words: int = 0
    curve_on_tuning_split: bool = False
    curve_baseline: float | None = None  # the word-frequency baseline on the curve's words (when recorded)


# the families whose positions are a learnt absolute table added to the tokens (the locality
# start applies to them; DistilBERT copies its teacher's; DeBERTa and ModernBERT have none)
TABLE_FAMILIES = ("mini-bert", "mini-roberta", "mini-albert", "mini-electra")


SCORE_NAME = ("held-out whole-word accuracy: 15 % of the words of each held-out sentence (the same "
              "words for every tokenizer) have every piece masked; a word counts when every piece "
              "is the top-1 guess")


def search_of(tuning: dict | None) -> str:
    """A record's tuning search in a line: "lr=5e-4,1e-3,2e-3 dropout=0, 1,250,000 tokens per trial,
    each trial the opening of its own full run" ("" when the run had none)."""
    if not tuning:
        return ""
    how = {"prefix": ", each trial the opening of its own full run (the chosen one went on)",
           "separate": ", each trial from scratch on a schedule of its own"}
    return f"{tuning['grid']}, {tuning['trial_tokens']:,} tokens per trial" + how[tuning.get("search_kind", "separate")]


def zoo_comparison() -> tuple[ZooEntry, ...]:
    """Per family: budget, costs, size, the comparable score and its learning curve."""
    out = []
    for key, (family, _, idea, _) in _ZOO.items():
        r = _record(key)
        if r is None:
            continue
        pair_accuracy, pair_majority, pair_reference, _ = _pair_figures_of(r)
        scored = (f"its {r['config']['shape']['electra_generator_hidden']}-wide generator"
                  if "generator" in r["parameters"] else "the model")
        out.append(ZooEntry(
            key=key, family=family, idea=idea, tokenizer_kind=r["tokenizer_kind"],
            tokens=int(r["tokens"]), steps=int(r["steps"]), wall_minutes=float(r["wall_minutes"]),
            tokens_per_s=float(r["tokens"]) / (60 * float(r["wall_minutes"])),
            cpu_minutes=float(r["cpu_minutes_rank0"]), flops=float(r["flops"]),
            parameters=int(sum(r["parameters"].values())), score_name=SCORE_NAME,
            score=float(r["heldout"]["word_top1"]), scored_model=scored, everyday_top5=float(r["everyday"]["hit_rate"]),
            pair_accuracy=pair_accuracy, pair_majority=pair_majority, pair_reference=pair_reference,
            curve=tuple((int(p["tokens"]), float(p["word_top1"]), float(p["train_loss"]))
                        for p in r["curve"]),
            piece_loss=float(r["heldout"]["piece_loss"]),
            baseline_score=None if "unigram" not in r else float(r["unigram"]["word_top1"]),
            baseline_piece_loss=None if "unigram" not in r else float(r["unigram"]["piece_loss"]),
            tuning=", ".join(f"{k} {v:g}" for k, v in r.get("tuning", {}).get("chosen", {}).items()),
            tuning_search=search_of(r.get("tuning")),
            trained_on=r.get("device_name") or ("CPU" if r.get("device", "cpu") == "cpu" else r["device"]),
            rtd_auc=_detection_figures_of(r)[0],
            locality_start=key in TABLE_FAMILIES and r["config"].get("position_init") == "local",
            curve_words=int(r["curve"][-1].get("words", 0)) if r["curve"] else 0,
            curve_on_tuning_split="tuning_split" in r,
            curve_baseline=(r.get("unigram_tuning_split") or {}).get("word_top1"),
        ))
    return tuple(out)


@dataclass(frozen=True)
class DecoderEntry:
    """The zoo's decoder twin's run, as its record has it (``decoder_comparison``)."""

    key: str
    twin: str  # the encoder it is matched with
    tokens: int  # training tokens seen
    schedule_tokens: int  # the budget its schedule was set for (more than ``tokens``: a checkpoint of the run)
    steps: int
    wall_minutes: float
    tokens_per_s: float
    flops_per_token: float
    parameters: int
    piece_loss: float  # held-out next-piece loss (nats)
    baseline_piece_loss: float  # the word-frequency predictor's on the same pieces
    curve: tuple[tuple[int, float, float], ...]  # (tokens, next-piece loss on the tuning split, train loss)
    curve_baseline: float  # the word-frequency predictor on the curve's sentences
    concurrency: str  # what ran beside it


def decoder_comparison() -> tuple[DecoderEntry, ...]:
    """The zoo's decoder(s) with a record: costs, held-out next-piece loss and its learning curve."""
    out = []
    for key, (_, twin, _) in _DECODERS.items():
        r = _record(key)
        if r is None:
            continue
        out.append(DecoderEntry(
            key=key, twin=twin, tokens=int(r["tokens"]), schedule_tokens=int(r["config"]["tokens"]),
            steps=int(r["steps"]), wall_minutes=float(r["wall_minutes"]), tokens_per_s=float(r["tokens_per_s"]),
            flops_per_token=float(r["flops_per_token"]), parameters=int(r["parameters"]["model"]),
            piece_loss=float(r["heldout"]["piece_loss"]), baseline_piece_loss=float(r["unigram"]["piece_loss"]),
            curve=tuple((int(p["tokens"]), float(p["piece_loss"]), float(p["train_loss"])) for p in r["curve"]),
            curve_baseline=float(r["unigram_tuning_split"]["piece_loss"]), concurrency=r.get("concurrency", ""),
        ))
    return tuple(out)


def past_budget_start(key: str) -> tuple[str, str]:
    """(the zoo model it starts from, its head) of a model trained on past the shared budget."""
    start, head, _ = _PAST_BUDGET[key]
    return start, head


def past_budget_of(key: str, head: str) -> str:
    """The model trained on past the shared budget from zoo model ``key`` for ``head`` whose weights
    are here ("" if none)."""
    return next((k for k, (start, h, _) in _PAST_BUDGET.items()
                 if start == key and h == head and (zoo_folder(k) / "config.json").is_file()), "")


def detection_figures(key: str) -> tuple[float | None, tuple[tuple[str, float], ...]]:
    """(held-out ROC AUC of P(replaced) on generator-corrupted text, ((set, share of single-swap
    sentences whose swapped word ranks first), ...)) of a zoo family or a detector, from its record."""
    return _detection_figures_of(_record(key) or {})


def _detection_figures_of(r: dict) -> tuple[float | None, tuple[tuple[str, float], ...]]:
    swaps = (r.get("swap_detection") or {}).items()
    return (r.get("rtd_heldout") or {}).get("roc_auc"), tuple((k, float(v["first"])) for k, v in swaps
                                                               if isinstance(v, dict) and "first" in v)


def pair_figures(key: str) -> tuple:
    """(held-out pair accuracy, its majority share, the bag-of-words reference's accuracy, ((kind of
    held-out narrative pair, accuracy), ...)) of a model's NSP or SOP head, from its record (Nones
    and () where it has none)."""
    return _pair_figures_of(_record(key) or {})


def _pair_figures_of(r: dict) -> tuple:
    pair = r.get("pair_heldout") or {}
    return (pair.get("accuracy"), pair.get("majority"), (r.get("pair_reference") or {}).get("accuracy"),
            tuple((k, float(v)) for k, v in (r.get("pair_narrative") or {}).get("accuracy", {}).items()))
