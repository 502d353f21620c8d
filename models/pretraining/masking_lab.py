"""The masking-policy lab: simulate BERT's corruption on a text, measure it, score the loss.

Everything here goes through ``models.pretraining.masking`` (the same draws as transformers'
``DataCollatorForLanguageModeling``), so what a student sees is what a trainer does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..errors import CapabilityError, InputError
from ..mlm.masked_head import masked_logits
from ..registry import catalogue
from ..runtime.loading import load_model, load_tokenizer, refuse_decoder
from ..validation import check_bool, check_int, check_text
from .masking import FATES, KEPT, MASKED, NOT_SELECTED, RANDOM, MaskingPolicy, apply_masking, word_ids_from_offsets

MAX_EPOCHS = 20
MAX_LAB_TOKENS = 256
MAX_DRAWS = 5000
MAX_STAT_SENTENCES = 5000


@dataclass(frozen=True)
class MaskedPosition:
    """One selected position of one epoch: what was there, what the model was shown."""

    position: int
    original: str
    original_id: int
    fate: str  # "[MASK]", "random" or "kept"
    shown: str
    shown_id: int


@dataclass(frozen=True)
class MaskingEpoch:
    epoch: int
    shown_tokens: tuple[str, ...]  # the corrupted input, token by token
    shown_ids: tuple[int, ...]
    fates: tuple[str, ...]  # per token: "not selected", "[MASK]", "random", "kept"
    selected: tuple[MaskedPosition, ...]


@dataclass(frozen=True)
class MaskingSimulation:
    """``simulate_masking``'s result: the text's tokens and each epoch's corruption."""

    model_key: str
    text: str
    tokens: tuple[str, ...]
    ids: tuple[int, ...]
    special: tuple[bool, ...]
    word_ids: tuple[int, ...]  # -1 for special tokens
    policy: MaskingPolicy
    dynamic: bool
    seed: int
    epochs: tuple[MaskingEpoch, ...]


def check_selected(simulation: MaskingSimulation, epoch: int) -> None:
    """An ``InputError`` when the epoch selected no token (nothing to score), saying why."""
    if simulation.epochs[epoch].selected:
        return
    if simulation.policy.rate == 0:
        raise InputError("The selection rate is 0, so no token is selected and there is nothing to score: raise it.")
    raise InputError("No token was selected in this epoch: raise the rate, or try another seed.")


@dataclass(frozen=True)
class PositionLoss:
    position: int
    original: str
    shown: str
    fate: str
    p_original: float  # softmax over the whole vocabulary at this position
    rank: int  # 1 = the model's top guess
    nll: float  # -log p(original), nats
    top_guess: str


@dataclass(frozen=True)
class MaskedLMLoss:
    """The MLM loss of one epoch: the mean -log p over the selected positions only."""

    model_key: str
    epoch: int
    positions: tuple[PositionLoss, ...]
    loss: float
    top1_accuracy: float


@dataclass(frozen=True)
class MaskingStatistics:
    """Observed rates over many seeded draws, against the configured ones."""

    draws: int
    sentences: int
    configured: dict  # {"selected": rate, "[MASK]": mask, "random": random, "kept": keep}
    mean: dict  # the same keys: mean observed share per draw
    std: dict  # spread across draws
    special_selected: int  # how many special tokens were ever selected (must be 0)


def _policy(rate, mask, random, keep, whole_word) -> MaskingPolicy:
    return MaskingPolicy(rate=rate, mask=mask, random=random, keep=keep, whole_word=check_bool(whole_word, "whole_word"))


def simulate_masking(model_key: str, text: str, rate: float = 0.15, mask: float = 0.8,
                     random: float = 0.1, keep: float = 0.1, whole_word: bool = False,
                     epochs: int = 1, dynamic: bool = True, seed: int = 0) -> MaskingSimulation:
    """Corrupt ``text`` as BERT's pre-training would, for ``epochs`` passes.

    static (``dynamic=False``): one draw reused every epoch, static masking in its plain form
    (original BERT's data script drew 10 masks per sentence, ``dupe_factor = 10``, each reused
    over 4 of its 40 epochs); dynamic: a fresh draw each epoch, as RoBERTa does. Deterministic
    for a seed.

    rate: the share of tokens selected (0 to 1); mask / random / keep: how a selected token is
    shown (each 0 to 1, adding up to 1); whole_word: select whole words; epochs: 1 to 20;
    seed: 0 to 2**31 - 1; a text of at most 256 tokens. Anything else is an ``InputError``.
    """
    spec = catalogue.get_spec(model_key)
    refuse_decoder(spec, "show masked-LM training")
    policy = _policy(rate, mask, random, keep, whole_word)
    epochs = check_int(epochs, "epochs", 1, MAX_EPOCHS)
    dynamic = check_bool(dynamic, "dynamic")
    seed = check_int(seed, "seed", 0, 2**31 - 1)
    text = check_text(text)
    tokenizer = load_tokenizer(spec)
    if tokenizer.mask_token_id is None:
        raise CapabilityError(f"{model_key}'s tokenizer has no mask token.")
    enc = tokenizer(text, return_special_tokens_mask=True, return_offsets_mapping=True,
                    truncation=False, return_tensors="np", verbose=False)
    ids = torch.from_numpy(enc["input_ids"].astype(np.int64))  # (1, T)
    if ids.shape[1] > MAX_LAB_TOKENS:
        raise InputError(f"The text is {ids.shape[1]} tokens; the lab shows at most {MAX_LAB_TOKENS}. Shorten it.")
    special = torch.from_numpy(enc["special_tokens_mask"].astype(bool))
    word_ids = word_ids_from_offsets(enc["offset_mapping"], enc["special_tokens_mask"], [text])
    tokens = tokenizer.convert_ids_to_tokens(ids[0].tolist())
    generator = torch.Generator().manual_seed(seed)
    results, draw = [], None
    for epoch in range(epochs):
        if draw is None or dynamic:
            draw = apply_masking(ids, special, policy, mask_token_id=tokenizer.mask_token_id,
                                 vocab_size=len(tokenizer), generator=generator, word_ids=word_ids)
        inputs, _, fates = draw
        shown_ids = inputs[0].tolist()
        shown = tokenizer.convert_ids_to_tokens(shown_ids)
        fate_names = [FATES[f] for f in fates[0].tolist()]
        selected = tuple(
            MaskedPosition(i, tokens[i], int(ids[0, i]), fate_names[i], shown[i], shown_ids[i])
            for i in range(len(tokens)) if fates[0, i] != NOT_SELECTED
        )
        results.append(MaskingEpoch(epoch, tuple(shown), tuple(shown_ids), tuple(fate_names), selected))
    return MaskingSimulation(
        model_key=model_key, text=text, tokens=tuple(tokens), ids=tuple(ids[0].tolist()),
        special=tuple(bool(s) for s in special[0].tolist()), word_ids=tuple(int(w) for w in word_ids[0]),
        policy=policy, dynamic=dynamic, seed=seed, epochs=tuple(results),
    )


def masked_lm_loss(model_key: str, simulation: MaskingSimulation, epoch: int = 0) -> MaskedLMLoss:
    """Run the MLM on one epoch's corrupted input; score every selected position.

    Per position: logits -> softmax over the whole vocabulary -> p(original token), its
    rank, and -log p. The loss is the mean of -log p over the selected positions only,
    which is what ``cross_entropy(logits, labels, ignore_index=-100)`` computes.
    """
    if not isinstance(simulation, MaskingSimulation):
        raise InputError("masked_lm_loss needs the result of simulate_masking.")
    epoch = check_int(epoch, "epoch", 0, len(simulation.epochs) - 1)
    loaded = load_model(model_key, head="mlm")
    if model_key != simulation.model_key and (
        load_tokenizer(model_key).get_vocab() != load_tokenizer(simulation.model_key).get_vocab()
    ):
        raise InputError(
            f"The simulation was tokenised by {simulation.model_key}, whose vocabulary differs "
            f"from {model_key}'s: simulate with {model_key} first."
        )
    chosen = simulation.epochs[epoch]
    check_selected(simulation, epoch)
    inputs = torch.tensor([chosen.shown_ids], device=loaded.device)
    positions = [s.position for s in chosen.selected]
    logits = masked_logits(loaded.model, {"input_ids": inputs, "attention_mask": torch.ones_like(inputs)},
                           positions)  # (N, V): the head runs at the selected positions only
    log_probs = logits.float().log_softmax(-1)  # (N, V)
    targets = torch.tensor([s.original_id for s in chosen.selected], device=log_probs.device)
    true_lp = log_probs.gather(1, targets[:, None])[:, 0]  # (N,)
    ranks = (log_probs > true_lp[:, None]).sum(-1) + 1
    top = log_probs.argmax(-1).tolist()
    tokenizer = loaded.tokenizer
    rows = tuple(
        PositionLoss(s.position, s.original, s.shown, s.fate, float(lp.exp()), int(r), float(-lp),
                     tokenizer.convert_ids_to_tokens(int(t)))
        for s, lp, r, t in zip(chosen.selected, true_lp.cpu(), ranks.cpu(), top)
    )
    return MaskedLMLoss(
        model_key=model_key, epoch=epoch, positions=rows,
        loss=float(np.mean([r.nll for r in rows])),
        top1_accuracy=float(np.mean([r.rank == 1 for r in rows])),
    )


POLICY_PRESETS = {
    "80/10/10 (BERT)": (0.8, 0.1, 0.1),
    "100 % [MASK]": (1.0, 0.0, 0.0),
    "0/0/100 (all kept)": (0.0, 0.0, 1.0),
}


def compare_policies(model_key: str, text: str, rate: float = 0.15, seed: int = 0,
                     whole_word: bool = False) -> dict[str, MaskedLMLoss]:
    """The same text, seed and selection under each preset split: loss and top-1 side by side.

    The selection draw is the same for every preset (same seed, same first Bernoulli draw),
    so only what the model is shown at the selected positions changes. rate, seed,
    whole_word: as ``simulate_masking``; the keys are ``POLICY_PRESETS``' names.
    """
    return {
        name: masked_lm_loss(model_key, simulate_masking(model_key, text, rate, m, r, k, whole_word, 1, True, seed))
        for name, (m, r, k) in POLICY_PRESETS.items()
    }


def masking_statistics(model_key: str, sentences: list[str], rate: float = 0.15, mask: float = 0.8,
                       random: float = 0.1, keep: float = 0.1, whole_word: bool = False,
                       draws: int = 200, seed: int = 0) -> MaskingStatistics:
    """Draw the policy ``draws`` times over a batch of sentences; observed vs configured rates.

    sentences: a list of 1 to 5,000 texts; rate, mask, random, keep, whole_word: as
    ``simulate_masking``; draws: 1 to 5,000; seed: 0 to 2**31 - 1."""
    policy = _policy(rate, mask, random, keep, whole_word)
    draws = check_int(draws, "draws", 1, MAX_DRAWS)
    seed = check_int(seed, "seed", 0, 2**31 - 1)
    if isinstance(sentences, str) or not isinstance(sentences, (list, tuple)) or not sentences:
        raise InputError("Give a list of at least one non-empty sentence.")
    if len(sentences) > MAX_STAT_SENTENCES:
        raise InputError(f"Give at most {MAX_STAT_SENTENCES:,} sentences; got {len(sentences):,}.")
    sentences = [check_text(s, f"sentence {i + 1}") for i, s in enumerate(sentences)]
    spec = catalogue.get_spec(model_key)
    refuse_decoder(spec, "show masked-LM training")
    tokenizer = load_tokenizer(spec)
    enc = tokenizer(list(sentences), padding=True, truncation=True, max_length=128,
                    return_special_tokens_mask=True, return_offsets_mapping=True, return_tensors="np")
    ids = torch.from_numpy(enc["input_ids"].astype(np.int64))
    special_np = enc["special_tokens_mask"].astype(bool) | (enc["attention_mask"] == 0)
    special = torch.from_numpy(special_np)
    word_ids = word_ids_from_offsets(enc["offset_mapping"], special_np.astype(np.int64), sentences)
    generator = torch.Generator().manual_seed(seed)
    shares = {"selected": [], "[MASK]": [], "random": [], "kept": []}
    special_selected = 0
    eligible = int((~special).sum())
    for _ in range(draws):
        _, _, fates = apply_masking(ids, special, policy, mask_token_id=tokenizer.mask_token_id,
                                    vocab_size=len(tokenizer), generator=generator, word_ids=word_ids)
        special_selected += int((fates[special] != NOT_SELECTED).sum())
        counts = np.bincount(fates[~special].numpy(), minlength=4)
        chosen = counts[1:].sum()
        shares["selected"].append(chosen / eligible)
        for name, code in (("[MASK]", MASKED), ("random", RANDOM), ("kept", KEPT)):
            shares[name].append(counts[code] / chosen if chosen else np.nan)
    return MaskingStatistics(
        draws=draws, sentences=len(sentences),
        configured={"selected": rate, "[MASK]": mask, "random": random, "kept": keep},
        mean={k: float(np.nanmean(v)) for k, v in shares.items()},
        std={k: float(np.nanstd(v)) for k, v in shares.items()},
        special_selected=special_selected,
    )


def next_sentence(model_key: str, a: str, b: str) -> float:
    """P(IsNext): does sentence B follow sentence A? Needs a model with an NSP head."""
    from .objective_heads import pair_probability

    return pair_probability(model_key, a, b, "nsp")
