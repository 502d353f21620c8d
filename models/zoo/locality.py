"""The locality start: how the zoo's learnt absolute position tables begin training.

On the same data and budget, the families whose attention can see relative position by
construction (DeBERTa's relative attention, ModernBERT's rotary positions) leave the unigram
plateau within a few hundred steps; the families with a learnt absolute table (BERT, RoBERTa,
ALBERT, ELECTRA) stayed on it for 21.7 M tokens (``python -m scripts.zoo plateau`` runs them;
docs/zoo.md says what they found). A query-key product over absolute positions starts near
zero for every pair of positions, and nothing pulls it towards any offset until some head
already attends by offset: a saddle.

The locality start keeps every family's idea (a learnt absolute table added to the token
embeddings, its own attention) and changes only where the search begins:

* the table starts as Vaswani et al.'s sinusoids at twice the token embeddings' scale, and
* in every layer, heads 0 and 1 start as previous- and next-token heads: their query and
  key weights are fitted (ridge least squares, on the layer's own input at initialisation) to
  read the sine and cosine of the position's fastest frequencies (at most ``PAIRS`` pairs, none
  slower than ``MIN_FREQUENCY``), the key's rotated by one position, so that ``q_i . k_j``
  peaks at ``j = i - 1`` (head 0) and ``j = i + 1`` (head 1).

* where a linear map sits between the embeddings and the first layer (ALBERT's factorised
  embedding's ``embedding_hidden_mapping_in``, ELECTRA's ``embeddings_project``), it starts
  norm-preserving (orthonormal columns or rows, scaled so unit-variance embeddings reach the
  layer at unit variance), as BERT's embeddings reach its first layer, instead of
  transformers' N(0, 0.02), which shrinks them to a std of 0.02 sqrt(width).

Everything stays trainable; the other heads start as transformers initialises them. The fit
on the layer's input (not on the table) makes the same code right for factorised embeddings
(ALBERT's table projected to 128) and for RoBERTa's offset positions.

Why the projection's start: with ALBERT's mapping from 128-wide embeddings at N(0, 0.02) the
locality start stayed on the plateau (6.91 nats at 1.5 M tokens, the baseline 6.92); started as
the identity (6.63) or orthonormal (6.56) it left it (``python -m scripts.zoo plateau``).
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn

SHIFTS = (-1, 1)  # head 0 looks one position back, head 1 one position ahead
PAIRS = 8  # (sin, cos) pairs of the table's highest frequencies each local head reads
SHARPNESS = 1.0  # the peak's score, per pair, in units of the softmax's 1/sqrt(head width)
POSITION_SCALE = 2.0  # the sinusoidal table's std, in units of the token embeddings' std
RIDGE = 0.05  # the fit's ridge, relative to the inputs' mean variance
# pairs slower than this (radians per position) are not read: they barely tell a neighbour from
# the token itself. A 128-wide table keeps its 8 fastest pairs (1.0 down to 0.37), a 96-wide one
# (ALBERT's) 6 (down to 0.38), a 64-wide one 4 (down to 0.42) instead of reaching down to 0.13
MIN_FREQUENCY = 0.35


@torch.no_grad()
def sinusoidal_positions_(model: nn.Module) -> None:
    """Start a learnt absolute position table as Vaswani et al.'s sinusoids (still trained).

    Scaled to the token embeddings' standard deviation, so neither dominates the sum the
    embedding LayerNorm sees. RoBERTa's table is offset by padding_idx + 1 (its positions
    start there), so its row padding_idx + 1 + k gets position k's vector.
    """
    for name, module in model.named_modules():
        if not name.endswith("embeddings") or not hasattr(module, "position_embeddings"):
            continue
        table = module.position_embeddings
        if not isinstance(table, nn.Embedding):
            continue
        n, d = table.weight.shape
        offset = (table.padding_idx + 1) if table.padding_idx is not None else 0
        pos = torch.arange(n - offset, dtype=torch.float32)[:, None]
        freq = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))
        sin = torch.zeros(n - offset, d)
        sin[:, 0::2] = torch.sin(pos * freq)
        sin[:, 1::2] = torch.cos(pos * freq[: d // 2])
        std = float(module.word_embeddings.weight.std())
        table.weight[offset:] = sin * (std / float(sin.std()))


PROJECTIONS = ("embedding_hidden_mapping_in", "embeddings_project")  # ALBERT's, ELECTRA's


@torch.no_grad()
def norm_preserving_projections_(model: nn.Module, seed: int = 0) -> list[str]:
    """Restart the model's embedding-to-hidden projections as norm-preserving maps (orthonormal
    columns when it widens, times sqrt(out / in); orthonormal rows when it narrows), bias zero:
    inputs of unit variance per coordinate give outputs of unit variance. Returns their names."""
    done = []
    for name, module in model.named_modules():
        if name.rsplit(".", 1)[-1] in PROJECTIONS and isinstance(module, nn.Linear):
            out_f, in_f = module.weight.shape
            gen = torch.Generator().manual_seed(seed)
            q, _ = torch.linalg.qr(torch.randn(max(out_f, in_f), min(out_f, in_f), generator=gen, dtype=torch.float64))
            weight = q * math.sqrt(out_f / in_f) if out_f >= in_f else q.T
            module.weight.copy_(weight.to(module.weight.dtype))
            module.bias.zero_()
            done.append(name)
    return done


def position_tables(model: nn.Module) -> list[nn.Embedding]:
    """The model's learnt absolute position tables (none for relative or rotary positions)."""
    found = []
    for name, module in model.named_modules():
        table = getattr(module, "position_embeddings", None)
        if name.endswith("embeddings") and isinstance(table, nn.Embedding) and table not in found:
            found.append(table)
    return found


def attention_modules(model: nn.Module) -> list[nn.Module]:
    """Every self-attention with separate ``query`` / ``key`` projections, in layer order
    (ALBERT's one shared layer counts once)."""
    return [m for m in model.modules()
            if isinstance(getattr(m, "query", None), nn.Linear) and isinstance(getattr(m, "key", None), nn.Linear)]


def frequencies(width: int) -> torch.Tensor:
    """The sinusoidal table's angular frequencies (pair n: 10000 ** (-2n / width))."""
    return torch.exp(torch.arange(0, width, 2, dtype=torch.float64) * (-math.log(10000.0) / width))


def features(length: int, freqs: torch.Tensor, shift: int = 0) -> torch.Tensor:
    """(length, 2 * len(freqs)): sin and cos of ``freqs * (t - shift)`` for t = 0 .. length - 1."""
    t = torch.arange(length, dtype=torch.float64)[:, None] - shift
    out = torch.empty(length, 2 * len(freqs), dtype=torch.float64)
    out[:, 0::2], out[:, 1::2] = torch.sin(t * freqs), torch.cos(t * freqs)
    return out


def _layer_inputs(model: nn.Module, attention: nn.Module, ids: torch.Tensor) -> torch.Tensor:
    """What ``attention.query`` receives for ``ids`` (batch, length, hidden), dropout off; for
    ALBERT's one shared layer, its input at the first depth (deeper inputs are the same
    directions rescaled by the layers' LayerNorms, so the heads stay local, less sharply)."""
    seen = []
    hook = attention.query.register_forward_pre_hook(lambda mod, args: seen.append(args[0].detach()))
    was_training = model.training
    model.eval()
    try:
        model(input_ids=ids, attention_mask=torch.ones_like(ids))
    finally:
        hook.remove()
        model.train(was_training)
    return seen[0].double()


def _fit(inputs: torch.Tensor, target: torch.Tensor, ridge: float = RIDGE) -> tuple[torch.Tensor, torch.Tensor]:
    """Ridge least squares: (weight (out, in), bias (out,)) with inputs @ weight.T + bias ~ target.

    The ridge matters: a LayerNorm's outputs sum to zero, so plain least squares leaves the
    all-ones direction free and may put weights of 1e5 on it, harmless on this input and
    ruinous once training moves the LayerNorm's gain and bias.
    """
    batch, length, hidden = inputs.shape
    x = inputs.reshape(-1, hidden)
    y = target.repeat(batch, 1)
    mean_x, mean_y = x.mean(0), y.mean(0)
    xc, yc = x - mean_x, y - mean_y
    gram = xc.T @ xc
    gram += ridge * float(gram.diagonal().mean()) * torch.eye(hidden, dtype=x.dtype)
    weight = torch.linalg.solve(gram, xc.T @ yc).T  # (out, in)
    return weight, mean_y - weight @ mean_x


@torch.no_grad()
def locality_start_(models: dict[str, nn.Module], tokenizer, *, seed: int = 0, length: int = 64,
                    batch: int = 8, projections: bool = True) -> bool:
    """Apply the locality start to a family's models in place; False when none has a learnt
    absolute table (nothing changed). ``projections=False`` leaves the embedding projections as
    they are (the diagnostics that compare their starts)."""
    tables = [t for m in models.values() for t in position_tables(m)]
    if not tables:
        return False
    done = set()
    for model in models.values():  # ELECTRA's generator shares the discriminator's table
        for table in position_tables(model):
            if id(table) not in done:
                sinusoidal_positions_(model)
                offset = (table.padding_idx + 1) if table.padding_idx is not None else 0
                table.weight[offset:] *= POSITION_SCALE
                done.add(id(table))
    for model in models.values() if projections else ():  # before the fits, which read through them
        norm_preserving_projections_(model, seed)
    specials = set(tokenizer.all_special_ids)
    ordinary = torch.tensor([i for i in range(len(tokenizer)) if i not in specials])
    gen = torch.Generator().manual_seed(seed)
    ids = ordinary[torch.randint(len(ordinary), (batch, length), generator=gen)]
    ids[:, 0] = tokenizer.cls_token_id if tokenizer.cls_token_id is not None else ids[:, 0]
    for model in models.values():
        width = position_tables(model)[0].weight.shape[1]
        freqs = frequencies(width)[:PAIRS]
        freqs = freqs[freqs >= MIN_FREQUENCY]
        for attention in attention_modules(model):
            heads = attention.num_attention_heads
            head = attention.query.out_features // heads
            pairs = min(len(freqs), head // 2)
            inputs = _layer_inputs(model, attention, ids)
            # the peak's score is the same whatever the number of pairs read
            gain = math.sqrt(SHARPNESS * math.sqrt(head) * PAIRS / pairs)
            for h, shift in enumerate(SHIFTS[:heads]):
                rows = slice(h * head, h * head + 2 * pairs)  # the head's other rows keep their start
                for linear, target in ((attention.query, features(length, freqs[:pairs])),
                                       (attention.key, features(length, freqs[:pairs], shift))):
                    weight, bias = _fit(inputs, target)
                    linear.weight[rows] = (gain * weight).to(linear.weight.dtype)
                    linear.bias[rows] = (gain * bias).to(linear.bias.dtype)
    return True
