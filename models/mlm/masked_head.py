"""The MLM head at the masked positions only, and the vocabulary product's layout.

The vocabulary projection (hidden x ~30k) costs about as much as the whole encoder of a
small model. The pipeline projects every position and then keeps the masked ones; here a
forward hook on the encoder keeps only the masked positions' hidden states, so the head
runs on those alone (``gather_positions``, ``masked_logits``, ``batch_masked_logits``: used by
fill-mask, generation, the masking lab, the loss arithmetic, distillation and attribution).
The head acts position by position, so the logits are the same.
"""

from __future__ import annotations

import functools
import threading
from contextlib import contextmanager

import torch

from ..runtime.cpu import cpu_vendor
from ..runtime.onednn import onednn_linears

# The positions travel in a thread-local: one hook per model serves concurrent requests.

_gather = threading.local()
_hook_lock = threading.Lock()


def _keep_positions(_module, _args, output):
    positions = getattr(_gather, "positions", None)
    if positions is None:
        return None
    hidden = output[0] if isinstance(output, tuple) else output.last_hidden_state
    if isinstance(positions, tuple):  # (rows, cols) of a batch: all kept states in one row
        rows, cols = positions
        kept = hidden[rows, cols].unsqueeze(0)  # (1, P, H)
    else:
        kept = hidden[:, positions]  # (B, M, H)
    if isinstance(output, tuple):
        return (kept,) + output[1:]
    output.last_hidden_state = kept
    return output


_keep_positions.packed_pass_through = True  # a no-op outside gather_positions (models.runtime.packed)


# The vocabulary projection of a few kept positions (1-8 rows of hidden x ~30k words).
# Which layout is fast depends on the CPU's vendor, through MKL (torch's matrix library on
# x86-64), which takes other code paths on other vendors' CPUs:
# - AMD EPYC (2026-11): nn.Linear's x @ W.T took a slow path with a handful of rows (two
#   threads: 9.5 ms for 3 rows of 384 against 30,522 words); W @ x.T, reading the weight in
#   its stored order, 1.4 ms. One row is a matrix-vector product, which ran on one thread at
#   3.4 ms; padded with a zero row to a two-column product, 1.0 ms. Above 8 rows one thread
#   did better with nn.Linear. (Splitting the weight's rows across the two cores by hand:
#   bimodal, no gain.)
# - Intel Xeon (2026-12-03, same run, alternating): nn.Linear 2.0 ms for 2 rows, W @ x.T
#   5.3 ms. So the transposed layout is for AMD's CPUs only; elsewhere nn.Linear.
# Same products, float rounding aside. Training and pipelines sharing the model are untouched.
FEW_ROWS = 8


@functools.cache
def transposed_few_rows() -> bool:
    """Whether a few rows' projection takes W @ x.T here (an AMD CPU) rather than nn.Linear."""
    return cpu_vendor() == "AuthenticAMD"


def project(decoder: torch.nn.Linear, rows: torch.Tensor) -> torch.Tensor:
    """(P, d) hidden rows -> (P, V) logits, in the layout this CPU runs fastest (above)."""
    count = rows.shape[0]
    if not (0 < count <= FEW_ROWS and rows.device.type == "cpu" and transposed_few_rows()):
        return torch.nn.functional.linear(rows, decoder.weight, decoder.bias)
    if count == 1:
        rows = torch.cat((rows, rows.new_zeros(1, rows.shape[1])))
    if decoder.bias is None:
        out = decoder.weight @ rows.T
    else:
        out = torch.addmm(decoder.bias.unsqueeze(1), decoder.weight, rows.T)
    return out[:, :count].T


def _project_few(decoder: torch.nn.Linear, hidden: torch.Tensor) -> torch.Tensor:
    """The decoder's forward while positions are gathered without gradients: ``project``."""
    if getattr(_gather, "positions", None) is None or torch.is_grad_enabled():
        return torch.nn.Linear.forward(decoder, hidden)
    rows = hidden.reshape(-1, hidden.shape[-1])
    return project(decoder, rows).reshape(*hidden.shape[:-1], decoder.out_features)


def _ensure_hook(model) -> None:
    with _hook_lock:
        if not getattr(model, "_encoder_lab_gather", False):
            model.base_model.register_forward_hook(_keep_positions)
            decoder = model.get_output_embeddings()
            if type(decoder) is torch.nn.Linear:
                decoder.forward = functools.partial(_project_few, decoder)
            model._encoder_lab_gather = True


@contextmanager
def gather_positions(model, positions: list[int], device, rows: list[int] | None = None):
    """Within this block (and this thread), ``model``'s MLM head projects only ``positions``.

    Yields the positions as an index tensor. With ``rows`` (one per position: which text
    of the batch), the kept states of a batch come out as one row (1, P, H). A caller must
    check the logits' second dimension: a head that re-pads its output gives every position
    (index it then).
    """
    _ensure_hook(model)
    index = torch.as_tensor(positions, dtype=torch.long, device=device)
    if rows is not None:
        index = (torch.as_tensor(rows, dtype=torch.long, device=device), index)
    _gather.positions = index
    try:
        yield index
    finally:
        _gather.positions = None


def masked_logits(model, inputs: dict, positions: list[int]) -> torch.Tensor:
    """(M, V) logits of an MLM model for one input (batch of 1), at ``positions`` only."""
    with gather_positions(model, positions, inputs["input_ids"].device) as index, onednn_linears(model):
        with torch.inference_mode():
            logits = model(**inputs).logits  # (1, M, V)
    if logits.shape[1] != len(positions):  # a head that re-pads its output: project all
        with torch.inference_mode():
            logits = model(**inputs).logits[:, index]
    return logits[0]


def batch_masked_logits(model, inputs: dict, rows: list[int], cols: list[int]) -> torch.Tensor:
    """(P, V) logits of an MLM model for a padded batch, at the (row, column) pairs only."""
    with (gather_positions(model, cols, inputs["input_ids"].device, rows=rows) as (row_index, col_index),
          onednn_linears(model)):
        with torch.inference_mode():
            logits = model(**inputs).logits  # (1, P, V)
    if logits.shape[1] != len(cols):  # a head that re-pads its output: project all
        with torch.inference_mode():
            return model(**inputs).logits[row_index, col_index]
    return logits[0]
