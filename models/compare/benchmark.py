"""Speed and memory of a forward pass, by architecture and sequence length.

``benchmark_forward(model_key, lengths, batch_size)`` times the bare encoder (no head) on
the current device (``models.runtime.loading.get_device()``): warm-up runs first, then the median
of several timed runs per length (in rounds that visit every length, so that load from
elsewhere on the machine does not fall on one length only), with the peak memory.

* Real weights when the model is available here; otherwise the architecture is built from
  its config with random weights (speed does not depend on the values) and the result is
  labelled "random-init: timing only": its outputs mean nothing.
* Inputs are random token ids, every sequence exactly ``length`` tokens long (no padding):
  what is measured is the attention and feed-forward cost of that length, not what
  ModernBERT's unpadding saves on padded batches.
* Bounded so the app stays responsive: lengths up to the model's max context, a cap on
  tokens per forward pass and on batch size (small on the CPU), a memory check before
  running, a time budget per model (lengths left when it runs out are reported as
  skipped), and one benchmark at a time.
"""

from __future__ import annotations

import statistics
import threading
import time
import weakref
from dataclasses import dataclass

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from transformers import AutoModel
from transformers.initialization import no_init_weights

from ..errors import EncoderLabError, InputError, ModelUnavailableError
from ..registry import catalogue
from ..registry.spec import ModelSpec
from ..runtime.loading import BUILD_LOCK, dtype_for, get_device, load_model
from ..validation import check_int
from .architecture import architecture_facts, load_config
from .side_by_side import SkippedModel, check_model_keys

DEFAULT_LENGTHS = (64, 128, 256, 512)
MAX_LENGTHS = 8  # how many lengths one call may ask for
MIN_LENGTH = 8
RANDOM_INIT = "random-init: timing only"
PRETRAINED = "pretrained weights"


@dataclass(frozen=True)
class DeviceLimits:
    """What one benchmark call may ask of a device."""

    max_batch: int
    max_tokens: int  # batch_size x length of one forward pass
    time_budget_s: float  # measuring time per model; lengths left over are skipped
    warmup: int  # untimed runs per length
    repeats: int  # timed runs per length (at least 3 when the time budget runs short)


CPU_LIMITS = DeviceLimits(max_batch=8, max_tokens=2048, time_budget_s=20.0, warmup=1, repeats=5)
GPU_LIMITS = DeviceLimits(max_batch=64, max_tokens=262_144, time_budget_s=60.0, warmup=3, repeats=10)


@dataclass(frozen=True)
class BenchmarkPoint:
    """Timings of one sequence length."""

    length: int
    batch_size: int
    median_ms: float
    min_ms: float
    max_ms: float
    runs: int  # timed runs (after the warm-up)
    tokens_per_s: float  # batch_size x length / median time
    peak_memory_mb: float  # MiB; what is measured: BenchmarkResult.memory_measure


@dataclass(frozen=True)
class BenchmarkResult:
    """Forward-pass timings of one model at several lengths."""

    model_key: str
    display_name: str
    weights: str  # "pretrained weights" or "random-init: timing only"
    device: str
    dtype: str
    attention: str  # the attention implementation transformers used, e.g. "sdpa"
    params: int
    max_context: int
    points: tuple[BenchmarkPoint, ...]
    skipped: tuple[tuple[int, str], ...]  # (length, why it was not run)
    warmup_runs: int
    memory_measure: str  # what peak_memory_mb means on this device
    weights_reason: str = ""  # random-init: why the real weights could not be used

    @property
    def random_init(self) -> bool:
        return self.weights == RANDOM_INIT

    @property
    def weights_detail(self) -> str:
        """The weights used, with why the real ones were not (for notes, not legends)."""
        if self.random_init and self.weights_reason:
            return f"{RANDOM_INIT} (real weights unavailable: {self.weights_reason})"
        return self.weights

    @property
    def label(self) -> str:
        """The model's name, marked when its weights are random."""
        return self.model_key + (f" ({RANDOM_INIT})" if self.random_init else "")


_running = threading.Lock()  # one benchmark at a time; it also guards _random_models
_random_models: dict[tuple, torch.nn.Module] = {}  # at most one: the last random-init model


def limits_for(device: torch.device) -> DeviceLimits:
    return GPU_LIMITS if device.type in ("cuda", "mps") else CPU_LIMITS


def _check_lengths(lengths) -> list[int]:
    if isinstance(lengths, (int, float)):
        lengths = [lengths]
    if not lengths or not isinstance(lengths, (list, tuple)):
        raise InputError("Choose at least one sequence length (in tokens, e.g. 128).")
    if len(lengths) > MAX_LENGTHS:
        raise InputError(f"At most {MAX_LENGTHS} lengths per run; you asked for {len(lengths)}.")
    checked = {check_int(n, "sequence length", MIN_LENGTH, 1_000_000) for n in lengths}
    return sorted(checked)


# --- memory -----------------------------------------------------------------------------


def _available_bytes(device: torch.device) -> int | None:
    """Free memory on the device now (None when it cannot be read)."""
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return int(free)
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


class LiveTensorBytes(TorchDispatchMode):
    """Peak bytes of live tensors created while it is active (a torch dispatch mode).

    Every tensor an operator returns is counted once per storage until its last Python
    reference dies; the peak of that running total is the memory the forward pass's
    tensors needed at once. Workspace a kernel allocates internally is not seen.
    """

    def __init__(self):
        super().__init__()
        self.live = 0
        self.peak = 0
        self._refs: dict[int, int] = {}  # storage address -> live tensors using it

    def _release(self, key: int, nbytes: int) -> None:
        self._refs[key] -= 1
        if self._refs[key] == 0:
            del self._refs[key]
            self.live -= nbytes

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for tensor in tree_flatten(out)[0]:
            if not isinstance(tensor, torch.Tensor) or tensor.device.type == "meta":
                continue
            storage = tensor.untyped_storage()
            key, nbytes = storage.data_ptr(), storage.nbytes()
            if not key:
                continue
            if key not in self._refs:
                self._refs[key] = 0
                self.live += nbytes
                self.peak = max(self.peak, self.live)
            self._refs[key] += 1
            weakref.finalize(tensor, self._release, key, nbytes)
        return out


def memory_measure(device: torch.device) -> str:
    if device.type == "cuda":
        return (
            "peak CUDA memory allocated during one extra, untimed forward pass, above what was "
            "allocated before it (weights, inputs, other models: excluded), from "
            "torch.cuda.max_memory_allocated: activations and workspace; other requests "
            "running on the same GPU at the same time can inflate it"
        )
    return (
        "peak bytes of the tensors alive at once during one extra, untimed forward pass, "
        "tracked operator by operator (a torch dispatch mode): activations, weights "
        "excluded; workspace a kernel allocates internally is not seen"
    )


def _estimate_bytes(params: int, dtype: torch.dtype, batch: int, length: int, facts) -> int:
    """A rough upper bound: weights plus a layer's activations (scores: batch x heads x T x T)."""
    itemsize = torch.empty((), dtype=dtype).element_size()
    scores = batch * facts.heads * length * length * itemsize * 2
    hidden = batch * length * max(facts.ffn * 2, facts.hidden * 4) * itemsize * 4
    return params * itemsize + scores + hidden


# --- the model to time ------------------------------------------------------------------


def _random_init(spec: ModelSpec, device: torch.device, dtype: torch.dtype) -> torch.nn.Module:
    """The architecture with random weights (seed 0), cached: only the last one is kept.

    transformers' own initialisation is skipped (ModernBERT's truncated normals take half
    a minute on a small CPU); matrices are drawn from N(0, 0.02), norm scales set to 1 and
    biases to 0: ordinary values, so no NaN or denormal slows the arithmetic. Buffers
    (position ids, rotary frequencies) are built by the modules themselves.
    """
    key = (spec.key, str(device), dtype)
    if key not in _random_models:  # only called under ``_running``: one caller at a time
        _random_models.clear()
        with BUILD_LOCK:  # no_init_weights patches transformers for the whole process
            with no_init_weights():
                model = AutoModel.from_config(load_config(spec))
        generator = torch.Generator().manual_seed(0)
        with torch.no_grad():
            for name, param in model.named_parameters():
                if param.dim() > 1:
                    param.normal_(0.0, 0.02, generator=generator)
                elif name.endswith("bias"):
                    param.zero_()
                else:
                    param.fill_(1.0)
        _random_models[key] = model.to(device=device, dtype=dtype).eval()
    return _random_models[key]


def _model_for(spec: ModelSpec, device: torch.device) -> tuple[torch.nn.Module, str, str]:
    """(the model to time, PRETRAINED or RANDOM_INIT, why the real weights were not used)."""
    available, why = catalogue.availability(spec)
    if available:
        try:
            return load_model(spec, head="base").model, PRETRAINED, ""
        except ModelUnavailableError as exc:  # cannot be loaded after all: time the architecture
            why = str(exc)
    return _random_init(spec, device, dtype_for(device)), RANDOM_INIT, why


# --- timing -----------------------------------------------------------------------------


def _sync(device: torch.device) -> None:
    """Wait for the device's queued work (GPU kernels run asynchronously)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def _inputs(model: torch.nn.Module, batch: int, length: int, device: torch.device) -> dict:
    vocab = int(model.config.vocab_size)
    generator = torch.Generator().manual_seed(length)
    ids = torch.randint(5, vocab, (batch, length), generator=generator)  # (B, T)
    return {"input_ids": ids.to(device), "attention_mask": torch.ones_like(ids).to(device)}


def _run_once(model, inputs: dict, device: torch.device) -> float:
    """One forward pass, in seconds (the device synchronised before the clock stops)."""
    start = time.perf_counter()
    model(**inputs)
    _sync(device)
    return time.perf_counter() - start


def _peak_memory_mb(model, inputs: dict, device: torch.device) -> float:
    """Peak activation memory of one forward pass (see ``memory_measure``)."""
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
        model(**inputs)
        _sync(device)
        return (torch.cuda.max_memory_allocated(device) - before) / 2**20
    with LiveTensorBytes() as tracked:  # tracking slows every operator: never a timed run
        model(**inputs)
    return tracked.peak / 2**20


def _measure(model, device, limits: DeviceLimits, batch: int, lengths: list[int]):
    """Warm-up, then timed rounds: each round runs every length once, so a burst of load
    from elsewhere on the machine slows all lengths alike instead of one.

    Returns (points, skipped). A length whose warm-up would overrun the time budget is
    skipped; timed rounds stop early (at least 3) when the budget runs out.
    """
    started = time.monotonic()
    inputs, last, skipped = {}, {}, []
    for n in lengths:  # warm-up, shortest first; a forecast keeps within the budget
        forecast = max(last.values(), default=0.0) * n / max(last, default=n) * (limits.warmup + 3)
        if time.monotonic() - started + forecast > limits.time_budget_s:
            skipped.append((n, f"would not finish within the time budget of {limits.time_budget_s:.0f} s per model"))
            continue
        inputs[n] = _inputs(model, batch, n, device)
        last[n] = max(_run_once(model, inputs[n], device) for _ in range(limits.warmup))
    times: dict[int, list[float]] = {n: [] for n in inputs}
    for round_ in range(limits.repeats):
        left = limits.time_budget_s - (time.monotonic() - started)
        if round_ >= 3 and sum(last.values()) > left:
            break
        for n in inputs:
            last[n] = _run_once(model, inputs[n], device)
            times[n].append(last[n])
    points = []
    for n, runs in times.items():
        median = statistics.median(runs)
        points.append(
            BenchmarkPoint(
                length=n,
                batch_size=batch,
                median_ms=median * 1000,
                min_ms=min(runs) * 1000,
                max_ms=max(runs) * 1000,
                runs=len(runs),
                tokens_per_s=batch * n / median,
                peak_memory_mb=round(_peak_memory_mb(model, inputs[n], device), 3),
            )
        )
    return points, skipped


def benchmark_forward(model_key: str, lengths=DEFAULT_LENGTHS, batch_size: int = 1) -> BenchmarkResult:
    """Forward-pass time (median after warm-up) and peak memory at each sequence length.

    Lengths beyond the model's max context are skipped (with the reason); a request whose
    batch x length or memory estimate exceeds what this device allows is refused with an
    ``InputError``. Only one benchmark runs at a time.
    """
    spec = catalogue.get_spec(model_key)
    device = get_device()
    limits = limits_for(device)
    lengths = _check_lengths(lengths)
    batch = check_int(batch_size, "batch_size", 1, limits.max_batch)
    facts = architecture_facts(spec)
    skipped = [(n, f"beyond {model_key}'s max context of {facts.max_context} tokens") for n in lengths if n > facts.max_context]
    lengths = [n for n in lengths if n <= facts.max_context]
    if not lengths:
        raise InputError(
            f"Every length asked for is beyond {model_key}'s max context of {facts.max_context} tokens."
        )
    longest = max(lengths)
    if batch * longest > limits.max_tokens:
        raise InputError(
            f"batch_size x length = {batch} x {longest} = {batch * longest:,} tokens per forward pass; "
            f"on this device ({device.type}) the limit is {limits.max_tokens:,}. Use a smaller batch "
            "or shorter lengths."
        )
    dtype = dtype_for(device)
    need = _estimate_bytes(facts.params_total, dtype, batch, longest, facts)
    free = _available_bytes(device)
    if free is not None and need > free // 2:
        raise InputError(
            f"{model_key} at batch {batch} x {longest} tokens needs about {need / 2**30:.1f} GiB; "
            f"{device.type} has {free / 2**30:.1f} GiB free and a benchmark may use half. Use a "
            "smaller batch or shorter lengths."
        )
    if not _running.acquire(blocking=False):
        raise InputError("A benchmark is already running; timings would disturb each other. Try again when it ends.")
    try:
        model, weights, weights_reason = _model_for(spec, device)
        with torch.inference_mode():
            points, over_budget = _measure(model, device, limits, batch, lengths)
        skipped += over_budget
    finally:
        _running.release()
    return BenchmarkResult(
        model_key=model_key,
        display_name=spec.display_name,
        weights=weights,
        device=str(device),
        dtype=str(dtype).removeprefix("torch."),
        attention=str(getattr(model.config, "_attn_implementation", None) or "default"),
        params=facts.params_total,
        max_context=facts.max_context,
        points=tuple(points),
        skipped=tuple(sorted(skipped)),
        warmup_runs=limits.warmup,
        memory_measure=memory_measure(device),
        weights_reason=weights_reason,
    )


def benchmark_models(model_keys, lengths=DEFAULT_LENGTHS, batch_size: int = 1, on_model=None):
    """``benchmark_forward`` for each model in turn: (results, models that could not run).

    A model whose request is refused (e.g. every length beyond its context) is listed with
    the reason and the others still run. ``on_model(index, key)`` is called before each.
    """
    specs = [catalogue.get_spec(key) for key in check_model_keys(model_keys)]  # unknown keys: said first
    _check_lengths(lengths)  # a mistake in the request is said once, not once per model
    check_int(batch_size, "batch_size", 1, limits_for(get_device()).max_batch)
    results, refused = [], []
    for index, spec in enumerate(specs):
        if on_model is not None:
            on_model(index, spec.key)
        try:
            results.append(benchmark_forward(spec.key, lengths, batch_size))
        except EncoderLabError as exc:
            refused.append(SkippedModel(spec.key, str(exc)))
    if not results:
        raise InputError(" ".join(f"{s.model_key}: {s.reason}" for s in refused))
    return tuple(results), tuple(refused)
