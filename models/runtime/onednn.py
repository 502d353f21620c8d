"""oneDNN for an encoder's linear layers when the core serves inference on the CPU.

On the CPU, ``nn.Linear`` runs on MKL's sgemm. torch also ships oneDNN, whose linear
kernel (``torch.ops.mkldnn._linear_pointwise``, the op torch.compile emits for a CPU linear)
takes the same dense float32 tensors and weights. On the 2-core x86-64 machine (AMD EPYC)
it runs the encoder's shapes in 0.44-0.63 of MKL's time, same run: 18 rows (a fill-mask
sentence) x 384 -> 384 / 1536 and back, 33 / 90 / 109 us against 52 / 203 / 192; 400 rows
(an embedding batch), 287 / 1,112 / 1,125 us against 611 / 2,452 / 2,472. (MKL stays at
170-185 GFLOP/s whatever the shape, oneDNN reaches ~400: likely MKL's AVX2 code path on an
AMD CPU against oneDNN's AVX-512; not checked further.) Same products in
float32, summation order aside: sentence vectors 2.5e-7 from sentence-transformers' (the
bench; the tests hold them to 1e-5), fill-mask scores within 1e-5 of the pipeline's (tested).

``onednn_linears(model)`` turns it on for one block of one thread, the way the fill-mask
head's position gathering does: each ``nn.Linear`` of the model's body gets a forward that
takes the oneDNN path only while the block is open, on the CPU, in float32, without
gradients. Anything else (training, attribution's gradients, a pipeline sharing the model,
another thread) runs ``nn.Linear`` as before. The weights are read in place: no copy.

The op's name starts with an underscore (torch's own compiler calls it), so it is checked
once against ``nn.Linear`` before first use; if it is missing or disagrees, the path stays
off. Measured on x86-64 only (AMD EPYC, AVX-512); elsewhere (e.g. Apple silicon) it is off.
``use_onednn(False)`` turns it off everywhere: the benchmarks use it to measure its share.
"""

from __future__ import annotations

import functools
import platform
import threading
from contextlib import contextmanager

import torch

_state = threading.local()
_lock = threading.Lock()
_wanted = platform.machine().lower() in ("x86_64", "amd64")
_works: bool | None = None  # the op checked against nn.Linear (once, on first use)


def use_onednn(enabled: bool) -> bool:
    """Turn the oneDNN path on or off for every model (default: on for x86-64 CPUs).

    Returns the previous setting. On, it still runs only where the op exists and agrees
    with ``nn.Linear`` (checked once).
    """
    global _wanted
    previous = _wanted
    _wanted = bool(enabled)
    return previous


def onednn_enabled() -> bool:
    """Whether ``onednn_linears`` takes the oneDNN path here (wanted, and the op checked)."""
    return _wanted and _op_works()


def _op_works() -> bool:
    global _works
    if _works is None:
        with _lock:
            if _works is None:
                _works = _check_op()
    return _works


def _check_op() -> bool:
    """The op exists, and agrees with nn.Linear on a small case (with and without bias)."""
    if not torch.backends.mkldnn.is_available():
        return False
    try:
        generator = torch.Generator().manual_seed(0)
        x = torch.randn(3, 5, 16, generator=generator)
        weight = torch.randn(8, 16, generator=generator)
        bias = torch.randn(8, generator=generator)
        with torch.no_grad():
            for b in (bias, None):
                got = _linear_op(x, weight, b)
                if not torch.allclose(got, torch.nn.functional.linear(x, weight, b), rtol=1e-5, atol=1e-5):
                    return False
    except Exception:  # a build without the op, or one that rejects these arguments
        return False
    return True


@contextmanager
def onednn_linears(model):
    """Within this block (and this thread), ``model``'s body runs its linear layers on oneDNN."""
    if not onednn_enabled():
        yield
        return
    _patch(model)
    previous = getattr(_state, "on", False)
    _state.on = True
    try:
        yield
    finally:
        _state.on = previous


def _patch(model) -> None:
    if getattr(model, "_encoder_lab_onednn", False):  # every call after the first: no lock
        return
    with _lock:
        if getattr(model, "_encoder_lab_onednn", False):
            return
        body = getattr(model, "base_model", model)
        for module in body.modules():
            if type(module) is torch.nn.Linear:
                module.forward = functools.partial(_forward, module)
        model._encoder_lab_onednn = True


def _forward(linear: torch.nn.Linear, x: torch.Tensor) -> torch.Tensor:
    weight = linear.weight
    if (not getattr(_state, "on", False) or torch.is_grad_enabled() or x.device.type != "cpu"
            or x.dtype != torch.float32 or weight.dtype != torch.float32 or x.dim() < 2):
        return torch.nn.Linear.forward(linear, x)
    return _linear_op(x.contiguous(), weight, linear.bias)


def _linear_op(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """oneDNN's x @ W.T + b (no fused activation)."""
    return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "")
