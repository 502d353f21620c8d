"""Fine-tuning a copy of a small encoder with a task head (the shared cached model is never
changed); the frozen probes are in ``heads``."""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F

from ..embeddings.pooling import encode_unpadded
from ..errors import CapabilityError
from .classifier_model import ClassifierModel
from .features import word_positions
from .live_training import linear_head

MAX_FINETUNE_PARAMETERS = 40_000_000  # all-MiniLM-L6-v2 is 22.7 M; BERT-base (110 M) is refused
FINETUNE_BATCH = 16


def _batches(ids, labels, size: int, order):
    for start in range(0, len(order), size):
        yield [ids[i] for i in order[start:start + size]], [labels[i] for i in order[start:start + size]]


def _padded(rows, pad_id: int, device):
    width = max(len(r) for r in rows)
    input_ids = torch.full((len(rows), width), pad_id, dtype=torch.long)  # (B, T)
    mask = torch.zeros((len(rows), width), dtype=torch.long)  # (B, T)
    for i, r in enumerate(rows):
        input_ids[i, :len(r)] = torch.tensor(r)
        mask[i, :len(r)] = 1
    return input_ids.to(device), mask.to(device)


def _token_targets(positions_labels, width: int, device) -> torch.Tensor:
    """(B, T) class per token: the word's label at its first token, -100 (ignored) elsewhere."""
    target = torch.full((len(positions_labels), width), -100, dtype=torch.long)
    for i, pairs in enumerate(positions_labels):
        for p, y in pairs:
            target[i, p] = y
    return target.to(device)


def _finetune_units(loaded, task, split: str):
    """(ids per sentence, target per sentence): a class, or [(position, class)] per word."""
    texts, labels = getattr(task, f"{split}_texts"), getattr(task, f"{split}_labels")
    token = task.info.kind == "token"
    enc = encode_unpadded(loaded, texts, offsets=token)
    if not token:
        return enc["input_ids"], list(labels)
    spans = getattr(task, f"{split}_spans")
    targets = []
    for offsets, s, ys in zip(enc["offset_mapping"], spans, labels):
        targets.append([(p, y) for p, y in zip(word_positions(offsets, s), ys) if p >= 0])
    return enc["input_ids"], targets


def _run_epoch(model, ids, targets, order, optimiser, pad_id, device, token: bool):
    """One pass (training when an optimiser is given); returns (mean loss, accuracy) per unit."""
    total_loss, correct, units = 0.0, 0, 0
    for rows, ys in _batches(ids, targets, FINETUNE_BATCH, order):
        input_ids, mask = _padded(rows, pad_id, device)
        with torch.set_grad_enabled(optimiser is not None):
            logits = model(input_ids=input_ids, attention_mask=mask)
            if token:
                target = _token_targets(ys, input_ids.shape[1], device)
                logits, target = logits.reshape(-1, logits.shape[-1]), target.reshape(-1)
                keep = target != -100
                logits, target = logits[keep], target[keep]
            else:
                target = torch.tensor(ys, device=device)
            loss = F.cross_entropy(logits, target, reduction="sum")
        if optimiser is not None:
            optimiser.zero_grad()
            (loss / max(1, len(target))).backward()
            optimiser.step()
        total_loss += float(loss.detach())
        correct += int((logits.argmax(-1) == target).sum())
        units += len(target)
    return total_loss / max(1, units), correct / max(1, units)


def finetune(loaded, task, pooling, layer, epochs, seed, subset, lr):
    """Fine-tune a copy of the encoder with a new linear head on a task: a ``ClassifierModel``
    and its per-epoch curves (train loss, train accuracy, val loss, val accuracy); models too big for an interactive run raise a CapabilityError."""
    body_params = sum(p.numel() for p in loaded.model.parameters())
    if body_params > MAX_FINETUNE_PARAMETERS:
        raise CapabilityError(
            f"Fine-tuning {loaded.spec.key} ({body_params / 1e6:.0f} M parameters) is too big for an "
            f"interactive run here (limit {MAX_FINETUNE_PARAMETERS / 1e6:.0f} M): train a probe on it "
            "(freeze=True), or fine-tune a smaller model."
        )
    token = task.info.kind == "token"
    train_ids, train_targets = _finetune_units(loaded, task, "train")
    val_ids, val_targets = _finetune_units(loaded, task, "validation")
    if subset is not None:
        train_ids, train_targets = [train_ids[i] for i in subset], [train_targets[i] for i in subset]
    device = loaded.device
    with torch.random.fork_rng(devices=[] if device.type == "cpu" else [device]):
        torch.manual_seed(seed)
        body = copy.deepcopy(loaded.model).float()  # a copy: the shared cached model stays as it is
        head = linear_head(body, len(task.info.labels), device)
        model = ClassifierModel(body, head, task.info.kind, pooling, layer, loaded.tokenizer, task.info.labels)
        optimiser = torch.optim.AdamW([
            {"params": body.parameters(), "lr": lr},
            {"params": head.parameters(), "lr": lr * 20},
        ], weight_decay=0.01)
        generator = torch.Generator().manual_seed(seed)
        pad_id = loaded.tokenizer.pad_token_id or 0
        curves = ([], [], [], [])
        for _ in range(epochs):
            model.train()
            order = torch.randperm(len(train_ids), generator=generator).tolist()
            _run_epoch(model, train_ids, train_targets, order, optimiser, pad_id, device, token)
            model.eval()
            train = _run_epoch(model, train_ids, train_targets, range(len(train_ids)), None, pad_id, device, token)
            val = _run_epoch(model, val_ids, val_targets, range(len(val_ids)), None, pad_id, device, token)
            for curve, value in zip(curves, train + val):
                curve.append(value)
    model.eval()
    return model, curves
