"""Distillation's MLM head at the masked positions only: the same logits and gradients as the
full head's output indexed by the mask (transformers' BertForMaskedLM is the reference)."""

from __future__ import annotations

import torch
from transformers import BertConfig, BertForMaskedLM

from models.pretraining.distillation import _logits_at


def _model(seed: int) -> BertForMaskedLM:
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=300, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return BertForMaskedLM(config)


def _batch():
    generator = torch.Generator().manual_seed(1)
    inputs = torch.randint(5, 300, (3, 9), generator=generator)
    attention = torch.ones(3, 9, dtype=torch.long)
    attention[2, 6:] = 0  # a padded row
    keep = torch.zeros(3, 9, dtype=torch.bool)
    keep[0, [1, 4]] = keep[1, 7] = keep[2, [0, 3, 5]] = True
    return inputs, attention, keep


def test_teacher_logits_at_the_masks_equal_the_full_heads():
    model, (inputs, attention, keep) = _model(0).eval(), _batch()
    with torch.no_grad():
        full = model(input_ids=inputs, attention_mask=attention).logits[keep]
        got = _logits_at(model, inputs, attention, keep)
    assert got.shape == full.shape == (int(keep.sum()), 300)
    torch.testing.assert_close(got, full, rtol=1e-5, atol=1e-5)


def test_student_logits_and_gradients_equal_the_full_heads():
    inputs, attention, keep = _batch()
    ours, reference = _model(2).train(), _model(2).train()
    target = torch.randint(0, 300, (int(keep.sum()),), generator=torch.Generator().manual_seed(3))
    loss = torch.nn.functional.cross_entropy(_logits_at(ours, inputs, attention, keep), target)
    full = reference(input_ids=inputs, attention_mask=attention).logits[keep]
    ref_loss = torch.nn.functional.cross_entropy(full, target)
    loss.backward()
    ref_loss.backward()
    torch.testing.assert_close(loss, ref_loss, rtol=1e-5, atol=1e-6)
    for (name, p), (_, q) in zip(ours.named_parameters(), reference.named_parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-6, msg=name)
