"""A zoo run's batches: the data order, each batch's pairs and masks, and the seeds they come from.

Every random draw of a run comes from ``ZooConfig.seed`` (and, under DDP, the rank) through
the named seeds below, so a run is reproduced by its seed, and a checkpoint that keeps the
generators' states and the data position (epoch, slot) resumes it exactly.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from ..pretraining.masking import MaskingPolicy, apply_masking
from .data import Examples, pad_batch, static_masking

STATIC_COPIES = 10  # BERT's dupe_factor: static masking draws 10 maskings of each sequence

# The named seeds. torch's default generator is seeded with ZooConfig.seed itself (the models'
# initialisation, dropout, the split step's per-part dropout seeds); the others:
MASK_SEED_FACTOR = 7919  # dynamic masking's torch generator: seed * 7919 + rank
SAMPLE_SEED_OFFSET = 17  # ELECTRA's replacements, sampled from its generator's logits: seed + 17 + rank
STATIC_COPY_STRIDE = 7_777_777  # BERT's static copy c (epoch % 10): added as c * 7,777,777 to each example's seed
STATIC_KEY_FACTOR = 1_000_003  # BERT's static masks of example i: the key seed * 1,000,003 + i + the copy's


def mask_generator(seed: int, rank: int) -> torch.Generator:
    """Dynamic masking's draws (every family but BERT)."""
    return torch.Generator().manual_seed(seed * MASK_SEED_FACTOR + rank)


def sample_generator(seed: int, rank: int, device: torch.device) -> torch.Generator:
    """ELECTRA's generator samples (on the training device)."""
    return torch.Generator(device=device).manual_seed(seed + SAMPLE_SEED_OFFSET + rank)


def pair_rng(seed: int, rank: int) -> np.random.Generator:
    """ALBERT's sentence-order pairs: where each chunk is cut, and which pairs are swapped."""
    return np.random.default_rng([seed, rank])


def epoch_order(seed: int, epoch: int, train_idx: list[int]) -> np.ndarray:
    """The training chunks in epoch ``epoch``'s order (the same on every rank)."""
    return np.random.default_rng([seed, epoch]).permutation(train_idx)


def copy_offset(epoch: int) -> int:
    """BERT's static copy seen in ``epoch``: the data is copied STATIC_COPIES times."""
    return STATIC_COPY_STRIDE * (epoch % STATIC_COPIES)


@dataclass
class Position:
    """Where a run is in its data: the epoch, and the batch slots of it already taken."""

    epoch: int = 0
    slot: int = 0


def batch_indices(position: Position, seed: int, train_idx: list[int], batch_size: int, rank: int = 0,
                  world: int = 1) -> Iterator[np.ndarray]:
    """Each batch's chunk indices, endlessly, epoch after epoch: this rank's every ``world``-th
    slot. ``position`` moves as batches are taken (a checkpoint keeps it)."""
    while True:
        order = epoch_order(seed, position.epoch, train_idx)
        n_slots = (len(order) - batch_size) // batch_size + 1 if len(order) >= batch_size else 0
        while position.slot < n_slots:
            b = position.slot * batch_size
            position.slot += 1
            if (position.slot - 1) % world == rank:
                yield order[b : b + batch_size]
        position.epoch, position.slot = position.epoch + 1, 0


@dataclass
class BatchMaker:
    """A family's training batches: (ids, token types, attention, masked inputs, labels, pair labels)."""

    examples: Examples
    tokenizer: object
    policy: MaskingPolicy
    pair_kind: str | None  # "nsp" (BERT), "sop" (ALBERT) or None
    static: bool  # BERT: each example's masks and pair fixed once per copy
    seed: int
    mask_gen: torch.Generator
    rng: np.random.Generator
    causal: bool = False  # a decoder: no masking; every real piece after the first is a target

    def __post_init__(self):
        self.special_ids = torch.tensor(sorted(set(self.tokenizer.all_special_ids)))

    def rows(self, idx, epoch: int) -> tuple[list, list, list]:
        """Each example's ids and token types (a pair's, with its label, for NSP / SOP)."""
        copy_seed = copy_offset(epoch)
        rows, types, labels_pair = [], [], []
        for i in idx:
            if self.pair_kind:
                r = np.random.default_rng([self.seed, int(i) + copy_seed]) if self.static else self.rng
                ids, tt, lab = self.examples.pair(int(i), r, self.pair_kind)
                labels_pair.append(lab)
            else:
                ids, tt = self.examples.packed(int(i))
            rows.append(ids), types.append(tt)
        return rows, types, labels_pair

    def make(self, idx, epoch: int):
        """The batch of chunks ``idx`` in ``epoch``, padded and masked."""
        rows, types, labels_pair = self.rows(idx, epoch)
        ids, tt, attention = pad_batch(rows, types, self.examples.pad)
        if self.causal:
            labels = ids.masked_fill(attention == 0, -100)
            labels[:, 0] = -100
            return ids, tt, attention, ids, labels, None
        special = (attention == 0) | torch.isin(ids, self.special_ids)
        tok = self.tokenizer
        if self.static:  # each example's draw depends on it (and its copy) alone
            keys = np.array([self.seed * STATIC_KEY_FACTOR + int(i) + copy_offset(epoch) for i in idx],
                            dtype=np.uint64)
            inputs, labels = static_masking(ids, special, self.policy, keys, mask_token_id=tok.mask_token_id,
                                            vocab_size=len(tok))
        else:
            inputs, labels, _ = apply_masking(ids, special, self.policy, mask_token_id=tok.mask_token_id,
                                              vocab_size=len(tok), generator=self.mask_gen)
        pair = torch.tensor(labels_pair) if self.pair_kind else None
        return ids, tt, attention, inputs, labels, pair
