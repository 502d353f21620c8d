"""oneDNN for an encoder's linear layers when the core serves inference on the CPU.

On the CPU, ``nn.Linear`` runs on MKL's sgemm. torch also ships oneDNN, whose linear
kernel (``torch.ops.mkldnn._linear_pointwise``, the op torch.compile emits for a CPU linear)
takes the same dense float32 tensors and weights. On the 2-core x86-64 machine (AMD EPYC)
it runs the encoder's shapes in 0.44-0.63 of MKL's time, same run: 18 rows (a fill-mask
sentence) x 384 -> 384 / 1536 and back, 33 / 90 / 109 us against 52 / 203 / 192; 400 rows
(an embedding batch), 287 / 1,112 / 1,125 us against 611 / 2,452 / 2,472. (Measured on
another day, the products alone, one run, pre-packed weights: with 2 threads oneDNN gives
185-201 GFLOP/s at 400-4,096 rows against MKL's 126-172; with one thread 102-108 against
79-97. About 107 GFLOP/s per core was this machine's float32 ceiling that day (a large
product on MKL: 90 per core), so oneDNN's products ran near it. The figures above it imply
~410-420 GFLOP/s on two cores: not reproduced; the machines here all read "AMD EPYC" with the
same flags, yet ``bench.embeddings`` has printed 1.33-2.10x across days, so the CPU behind the
name likely differs from day to day: treat every ratio as that day's.) Same products in
float32, summation order aside: sentence vectors 2.5e-7 from sentence-transformers' (the
bench; the tests hold them to 1e-5), fill-mask scores within 1e-5 of the pipeline's (tested).

``onednn_linears(model)`` turns it on for one block of one thread, the way the fill-mask
head's position gathering does: each ``nn.Linear`` of the model's body gets a forward that
takes the oneDNN path only while the block is open, on the CPU, in float32, without
gradients. Anything else (training, attribution's gradients, a pipeline sharing the model,
another thread) runs ``nn.Linear`` as before.

The op's name starts with an underscore (torch's own compiler calls it), so it is checked
once against ``nn.Linear`` before first use; if it is missing or disagrees, the path stays
off. Measured on x86-64 only (AMD EPYC, AVX-512; an Intel Xeon with AMX, where MKL is
faster and the benches' columns without oneDNN read fill-mask 2-4 % faster and embed 1-5 %
slower than with it: BENCHMARKS.md rows 1-2; fill-mask timed alone, one process per setting,
was the same either way); elsewhere (e.g. Apple silicon) it is off.
``use_onednn(False)`` turns it off everywhere: the benchmarks use it to measure its share.

Two more steps ride on the same op family, under the same conditions (and ``module.training``
off where a dropout sits in between): the block's intermediate GELU is fused into its product
(``_linear_pointwise(..., "gelu", [], "none")``: oneDNN's exact erf GELU, as BERT's ``gelu``;
"tanh" would be ``gelu_new``), and the residual add before each LayerNorm into the product
that precedes it (``_linear_pointwise.binary(x, residual, W, b, "add")``). Both are checked
once against nn.Linear + ``F.gelu`` / + add with the plain op. The weights of a small body
are packed once into oneDNN's blocked layout (``_reorder_linear_weight``, as torch.compile
does; a copy, see PACK_MAX_BYTES): given the stored weight the op seems to re-lay it out on
every call (the saving is about constant per call, ~50-70 us a 384 x 1536 product on one
thread, so largest on a few rows). Measured on the shared 2-core machine
under load (one thread, CPU time of the calling thread, the three variants alternating in
one process; not figures to publish): fill-mask on minilm-mlm 18.9 ms a call before, 15.6
ms with both (packing most of it, fused steps ~1 ms); ``embed`` of 128 short sentences
1.13 s before, 0.99 s with both (packing ~0.1 s, fused steps ~0.03 s).
"""

from __future__ import annotations

import functools
import platform
import threading
import weakref
from contextlib import contextmanager

import torch

_state = threading.local()
_lock = threading.Lock()  # patching a model
_check_lock = threading.Lock()  # checking the ops
_wanted = platform.machine().lower() in ("x86_64", "amd64")
_checked: dict[str, bool] | None = None  # the ops checked against their references (once, on first use)


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
    return _wanted and _works("linear")


def onednn_extras() -> dict[str, bool]:
    """Which of the path's extra steps run here: {"fused": GELU and residual add in the
    products, "packed": small bodies' weights prepacked} (each checked once)."""
    return {what: onednn_enabled() and _works(what) for what in ("fused", "packed")}


def _works(what: str) -> bool:
    """"linear" (the plain op), "fused" (+ GELU, + add), "packed" (the ops on a packed weight):
    all three checked together, once, on first use."""
    global _checked
    if _checked is None:
        with _check_lock:
            if _checked is None:
                linear = _check_op()
                _checked = {"linear": linear, "fused": linear and _check_fused(), "packed": linear and _check_packed()}
    return _checked[what]


def _sample():
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(3, 5, 16, generator=generator)
    weight = torch.randn(8, 16, generator=generator)
    bias = torch.randn(8, generator=generator)
    other = torch.randn(3, 5, 8, generator=generator)  # a residual, shaped as the output
    return x, weight, bias, other


def _agree(pairs) -> bool:
    return all(torch.allclose(got, want, rtol=1e-5, atol=1e-5) for got, want in pairs)


def _check_op() -> bool:
    """The op exists, and agrees with nn.Linear on a small case (with and without bias)."""
    if not torch.backends.mkldnn.is_available():
        return False
    try:
        x, weight, bias, _ = _sample()
        with torch.no_grad():
            return _agree((_linear_op(x, weight, b), torch.nn.functional.linear(x, weight, b)) for b in (bias, None))
    except Exception:  # a build without the op, or one that rejects these arguments
        return False


def _check_fused(packed: bool = False) -> bool:
    """The fused ops agree with nn.Linear + F.gelu (erf, not tanh) and nn.Linear + add."""
    try:
        x, weight, bias, other = _sample()
        w = _pack(weight) if packed else weight
        with torch.no_grad():
            pairs = []
            for b in (bias, None):
                linear = torch.nn.functional.linear(x, weight, b)
                pairs += [(_linear_gelu_op(x, w, b), torch.nn.functional.gelu(linear)),
                          (_linear_add_op(x, other, w, b), linear + other)]
                if packed:
                    pairs.append((_linear_op(x, w, b), linear))
            return _agree(pairs)
    except Exception:  # a build without these ops, or one that rejects these arguments
        return False


def _check_packed() -> bool:
    return _check_fused(packed=True)


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
        linears = [m for m in body.modules() if type(m) is torch.nn.Linear]
        size = sum(m.weight.numel() * m.weight.element_size() for m in linears)
        pack = size <= PACK_MAX_BYTES and _works("packed")
        fused = _works("fused")
        for module in body.modules():
            if type(module) is torch.nn.Linear:
                module._encoder_lab_pack = pack
                module.forward = functools.partial(_forward, module)
            elif fused and _is_linear_gelu(module):
                module.forward = functools.partial(_linear_gelu_forward, module)
            elif fused and _is_linear_add_norm(module):
                module.forward = functools.partial(_linear_add_norm_forward, module)
        model._encoder_lab_onednn = True


def _fast(x: torch.Tensor, weight: torch.Tensor) -> bool:
    """This thread's block is open and the call is one the path takes: CPU, float32, no grad."""
    return (getattr(_state, "on", False) and not torch.is_grad_enabled() and x.device.type == "cpu"
            and x.dtype == torch.float32 and weight.dtype == torch.float32 and x.dim() >= 2)


def _forward(linear: torch.nn.Linear, x: torch.Tensor) -> torch.Tensor:
    if not _fast(x, linear.weight):
        return torch.nn.Linear.forward(linear, x)
    return _linear_op(x.contiguous(), _weight(linear), linear.bias)


# --- fused post-ops: a block's GELU, and the residual add before LayerNorm ------------------
# Recognised by their code: a module whose class's forward is, bytecode and names, BERT's
# (``BertIntermediate``: dense then the activation; ``BertSelfOutput`` / ``BertOutput``:
# dense, dropout, LayerNorm(h + input)). transformers' RoBERTa, ELECTRA and other families
# copy these forwards line for line; anything else keeps its own forward (its nn.Linear
# layers still take the plain oneDNN path above).

def _code(function) -> tuple:
    code = function.__code__
    return code.co_code, code.co_names, code.co_varnames, code.co_consts


@functools.cache
def _bert_forwards() -> tuple[tuple, tuple]:
    """The code of BERT's intermediate and add-and-norm forwards (empty if unavailable)."""
    try:
        from transformers.models.bert import modeling_bert as bert

        return _code(bert.BertIntermediate.forward), _code(bert.BertOutput.forward)
    except Exception:  # no transformers, or a layout without these classes: nothing fused
        return (), ()


def _is_bert_forward(module, which: int) -> bool:
    return _class_is_bert(type(module), which)


@functools.cache
def _class_is_bert(cls, which: int) -> bool:
    """Whether the class's forward is BERT's (once per class: the packed path asks on every
    call, and a class's code does not change while it serves)."""
    reference = _bert_forwards()[which]
    forward = getattr(cls, "forward", None)
    return bool(reference) and hasattr(forward, "__code__") and _code(forward) == reference


def _is_exact_gelu(act) -> bool:
    if type(act) is torch.nn.GELU:
        return act.approximate == "none"
    if type(act).__name__ == "GELUActivation" and not act._forward_hooks and not act._forward_pre_hooks:
        return getattr(act, "act", None) is torch.nn.functional.gelu  # erf GELU, not the python one
    return False


def _has_dense(module) -> bool:
    return type(getattr(module, "dense", None)) is torch.nn.Linear


def _is_linear_gelu(module) -> bool:
    return (_is_bert_forward(module, 0) and _has_dense(module)
            and _is_exact_gelu(getattr(module, "intermediate_act_fn", None)))


def _is_linear_add_norm(module) -> bool:
    return (_is_bert_forward(module, 1) and _has_dense(module)
            and type(getattr(module, "LayerNorm", None)) is torch.nn.LayerNorm
            and type(getattr(module, "dropout", None)) is torch.nn.Dropout)


def _linear_gelu_forward(module, hidden_states: torch.Tensor) -> torch.Tensor:
    dense = module.dense
    if (not _fast(hidden_states, dense.weight) or dense._forward_hooks or dense._forward_pre_hooks
            or not _is_exact_gelu(module.intermediate_act_fn)):
        return type(module).forward(module, hidden_states)
    return _linear_gelu_op(hidden_states.contiguous(), _weight(dense), dense.bias)


def _linear_add_norm_forward(module, hidden_states: torch.Tensor, input_tensor: torch.Tensor) -> torch.Tensor:
    dense = module.dense
    if (module.training or not _fast(hidden_states, dense.weight) or dense._forward_hooks
            or dense._forward_pre_hooks or module.dropout._forward_hooks
            or input_tensor.shape != (*hidden_states.shape[:-1], dense.out_features)
            or input_tensor.dtype != torch.float32):
        return type(module).forward(module, hidden_states, input_tensor)
    # dropout is the identity outside training; the add is fused into the product
    summed = _linear_add_op(hidden_states.contiguous(), input_tensor.contiguous(), _weight(dense), dense.bias)
    return module.LayerNorm(summed)


# --- prepacked weights -------------------------------------------------------------------
# Given a weight as stored, oneDNN reorders it into its blocked layout on every call; packed
# once (``_reorder_linear_weight``, what torch.compile does for a CPU linear), the call reads
# it as is. A copy: a model's body is packed only if its linear weights take at most
# PACK_MAX_BYTES (the embedded MiniLMs: 42 MB each); larger ones read the stored weights. The
# packed copy is keyed by the weight's storage and version counter, so an in-place update
# (an optimiser step, load_state_dict) re-packs on the next call.
PACK_MAX_BYTES = 128 << 20
PACK_ROWS = 64  # the rows oneDNN is told to expect; the layout serves any count (tested)
_packed: "weakref.WeakKeyDictionary[torch.nn.Linear, tuple]" = weakref.WeakKeyDictionary()


def _weight(linear: torch.nn.Linear) -> torch.Tensor:
    weight = linear.weight
    if not getattr(linear, "_encoder_lab_pack", False) or weight.is_inference():  # no version counter
        return weight
    key = (weight.data_ptr(), weight._version, tuple(weight.shape))
    cached = _packed.get(linear)
    if cached is None or cached[0] != key:
        cached = (key, _pack(weight))
        _packed[linear] = cached
    return cached[1]


def prepacked_weights(model) -> list[torch.Tensor]:
    """The prepacked copies of ``model``'s linear weights made so far (none before its first
    call on the path, or where packing is off): the benchmarks tell weights from activations."""
    return [cached[1] for module in model.modules() if (cached := _packed.get(module)) is not None]


def _pack(weight: torch.Tensor) -> torch.Tensor:
    return torch.ops.mkldnn._reorder_linear_weight(weight.detach(), PACK_ROWS)


# --- the ops -----------------------------------------------------------------------------

def _linear_op(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """oneDNN's x @ W.T + b (no fused activation)."""
    return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "")


def _linear_gelu_op(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """gelu(x @ W.T + b), exact (erf) GELU: the algorithm "none" (oneDNN's gelu_erf), not "tanh"."""
    return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "gelu", [], "none")


def _linear_add_op(x: torch.Tensor, other: torch.Tensor, weight: torch.Tensor,
                   bias: torch.Tensor | None) -> torch.Tensor:
    """x @ W.T + b + other, the add fused into the product (``other`` shaped as the output)."""
    return torch.ops.mkldnn._linear_pointwise.binary(x, other, weight, bias, "add")
