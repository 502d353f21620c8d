"""One optimisation step of a zoo run: on one batch, or with the batch's rows split over threads.

``train_step`` runs the objective (DDP-wrapped or not) on the whole batch; ``split_step``
splits its rows over a pool of worker threads (``split_batch``), each part's losses weighted
by its share of what they average over and the gradients summed in a fixed order, so the step
is the whole batch's (summation order aside). With ``count_flops`` one FlopCounterMode spans
the step's forward and backward (``flop_counter``: torch's, with the CPU's fused attention).
"""

from __future__ import annotations

import contextlib

import torch
from torch.profiler import record_function  # the phases' labels for `scripts.zoo profile` (no cost unprofiled)

from .fast import dropout_generator


def flop_counter():
    """torch's FlopCounterMode, also counting the CPU's fused attention kernel.

    torch (2.13) has FLOP formulas for the CUDA SDPA kernels but not for
    ``_scaled_dot_product_flash_attention_for_cpu`` (what SDPA runs for ModernBERT on a CPU):
    without these two entries its attention would count as zero. They use torch's own
    formulas for the other SDPA kernels (forward: QK^T and AV; backward: five matmuls).
    """
    from torch.utils.flop_counter import FlopCounterMode, sdpa_backward_flop_count, sdpa_flop_count

    def forward(query, key, value, *args, out_shape=None, **kwargs) -> int:
        return sdpa_flop_count(query, key, value)

    def backward(grad_out, query, key, value, *args, out_shape=None, **kwargs) -> int:
        return sdpa_backward_flop_count(grad_out, query, key, value)

    aten = torch.ops.aten
    mapping = {aten._scaled_dot_product_flash_attention_for_cpu: forward,
               aten._scaled_dot_product_flash_attention_for_cpu_backward: backward}
    return FlopCounterMode(display=False, custom_mapping=mapping)


def train_step(wrapped, opt, trained, batch, sample_gen, autocast: str = "", count_flops: bool = False):
    """One optimisation step: (loss, loss parts, FLOPs or None).

    With ``count_flops`` one counter spans the forward (a teacher's included) and the
    backward: FlopCounterMode resets its counts each time it is entered, so it is entered
    once per step.
    """
    ids, attention, tt, inputs, labels, pair = batch
    counter = flop_counter() if count_flops else contextlib.nullcontext()
    with counter:
        with record_function("zoo.forward"), torch.autocast(ids.device.type, dtype=torch.bfloat16,
                                                            enabled=autocast == "bf16"):
            loss, parts = wrapped(ids, attention, tt, inputs, labels, pair, sample_gen)
        opt.zero_grad(set_to_none=True)
        with record_function("zoo.backward"):
            loss.backward()
    with record_function("zoo.optimizer"):
        torch.nn.utils.clip_grad_norm_(trained, 1.0)
        opt.step()
    return loss, parts, counter.get_total_flops() if count_flops else None


def split_batch(batch, workers: int):
    """``batch`` as ``workers`` parts of consecutive rows, each cut to its longest row, with
    each part's shares of the batch's masked positions, real tokens and rows; None when a
    part would have no masked position (its mean would be undefined)."""
    ids, attention, tt, inputs, labels, pair = batch
    rows = ids.shape[0]
    bounds = [round(rows * k / workers) for k in range(workers + 1)]
    n_masked, n_real = float((labels != -100).sum()), float(attention.sum())
    parts = []
    for a, b in zip(bounds, bounds[1:]):
        if b <= a:
            return None
        width = int(attention[a:b].sum(1).max())
        part = tuple(None if x is None else x[a:b, :width] if x.dim() == 2 else x[a:b] for x in batch)
        masked = float((part[4] != -100).sum())
        if not masked:
            return None
        parts.append((part, {"masked": masked / n_masked, "real": float(part[1].sum()) / n_real,
                             "rows": (b - a) / rows}))
    return parts


def split_step(objective, opt, trained, batch, sample_gen, pool, workers: int, count_flops: bool = False,
               autocast: str = ""):
    """``train_step`` with the batch's rows split over ``pool``'s threads (see ``split_batch``):
    the same loss and, summation order aside, the same gradient. Each part draws its dropout
    and ELECTRA's samples from generators seeded here, from torch's default generator and
    ``sample_gen``, so a run (and a resumed one) is reproducible whichever thread runs first."""
    parts = split_batch(batch, workers)
    if parts is None:
        return train_step(objective, opt, trained, batch, sample_gen, autocast, count_flops=count_flops)
    seeds = torch.randint(0, 2 ** 62, (len(parts),)).tolist()
    sample_seeds = torch.randint(0, 2 ** 62, (len(parts),), generator=sample_gen,
                                 device=sample_gen.device).tolist()

    def work(k):
        part, shares = parts[k]
        with dropout_generator(torch.Generator().manual_seed(seeds[k])):
            # autocast's state is per thread, its cache of weights cast to bfloat16 is not: with it,
            # one part's graph could take the other's cast of a weight (its backward node, numbered
            # in that thread), and the tied embeddings' gradient be summed in another order from
            # run to run (ELECTRA's runs differed in the last bits within 20 steps)
            with record_function("zoo.forward"), torch.autocast(
                    "cpu", dtype=torch.bfloat16, enabled=autocast == "bf16", cache_enabled=False):
                loss, losses = objective(*part, torch.Generator().manual_seed(sample_seeds[k]), shares=shares)
            with record_function("zoo.backward"):
                if count_flops:  # in turn, into .grad (FlopCounterMode's module hooks refuse autograd.grad)
                    loss.backward()
                    grads = None
                else:
                    grads = torch.autograd.grad(loss, trained, allow_unused=True)
        return loss.detach(), {name: v.detach() for name, v in losses.items()}, grads

    opt.zero_grad(set_to_none=True)
    counter = flop_counter() if count_flops else contextlib.nullcontext()
    with counter:  # a dispatch mode sees its own thread only: the counted step runs the parts in turn
        done = [work(k) for k in range(len(parts))] if count_flops else list(pool.map(work, range(len(parts))))
    if not count_flops:
        for i, p in enumerate(trained):
            grads = [d[2][i] for d in done if d[2][i] is not None]
            if grads:
                total = grads[0]
                for g in grads[1:]:  # a fixed order: part 0 + part 1 + ... (as .grad accumulates in turn)
                    total = total + g
                p.grad = total
    with record_function("zoo.optimizer"):
        torch.nn.utils.clip_grad_norm_(trained, 1.0)
        opt.step()
    loss, losses = done[0][0], dict(done[0][1])
    for d in done[1:]:
        loss = loss + d[0]
        losses = {name: v + d[1][name] for name, v in losses.items()}
    return loss, losses, counter.get_total_flops() if count_flops else None
