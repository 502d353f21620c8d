"""What every benchmark prints first (the machine: CPU model and flags, GPU, versions), the
same call with the core's oneDNN path off (its share of a ratio), which matrix-product path
the core chose on this CPU and why, and the spread of repeated runs."""

from __future__ import annotations

import os
import platform
import statistics
import time

from models.runtime.cpu import CPU_FLAGS, cpu_info  # noqa: F401  (every bench prints them)


def cpu_line() -> str:
    info = cpu_info()
    vendor = ", ".join(part for part in (info["vendor"], info["ids"]) if part)
    vendor = f" ({vendor})" if vendor else ""
    return (f"CPU: {info['model']}{vendor}; flags: {', '.join(info['flags']) or 'none of ' + '/'.join(CPU_FLAGS)}; "
            f"torch CPU capability {info['torch_capability']}")


def onednn_choice(device=None) -> tuple[bool, str]:
    """(on, why): whether the core runs the encoder's linear layers on oneDNN here, and why."""
    from models.runtime import onednn_enabled
    from models.runtime.onednn import PACK_MAX_BYTES, onednn_extras

    kind = getattr(device, "type", device or "cpu")
    if kind != "cpu":
        return False, f"oneDNN: not used (a CPU path; the model runs on {kind}, in its own kernels)"
    info = cpu_info()
    if onednn_enabled():
        extras = onednn_extras()
        return True, (f"oneDNN: on ({platform.machine()}, the op agrees with nn.Linear; CPU flags "
                      f"{'/'.join(info['flags']) or 'none'}: its gain over MKL depends on them, "
                      f"per layer 0.44-0.63 of MKL's time on one AMD EPYC day, 0.62-0.95 on another (2026-11-26); "
                      f"on an Intel Xeon with AMX (2026-12-03, these benches' columns without it) fill-mask 2-4 % slower "
                      f"than MKL in the alternation (alone about the same), embed 1-5 % faster; on an AMD EPYC of family 26 "
                      f"(2026-12-05, the same columns) fill-mask in 0.67 of MKL's time, embed 1.9x as fast; "
                      f"other CPUs not measured); "
                      f"GELU and residual adds fused into the products: {'on' if extras['fused'] else 'off (ops missing or disagree)'}; "
                      f"weights prepacked for bodies up to {PACK_MAX_BYTES >> 20} MiB: "
                      f"{'on' if extras['packed'] else 'off (op missing or disagrees)'}")
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False, f"oneDNN: off (not x86-64: {platform.machine()}); linear layers on torch's default (MKL/BLAS)"
    return False, "oneDNN: off (switched off, or the op is missing or disagrees with nn.Linear); MKL's sgemm"


def machine_line(device=None) -> str:
    import torch
    import transformers

    where = str(device) if device is not None else "cpu"
    if device is not None and getattr(device, "type", "") == "cuda":
        where = f"cuda ({torch.cuda.get_device_name(device)})"
    return (
        f"machine: {platform.machine()}, {os.cpu_count()} CPU cores, device {where}, "
        f"torch {torch.__version__} ({torch.get_num_threads()} threads), "
        f"transformers {transformers.__version__}, Python {platform.python_version()}\n{cpu_line()}"
    )


def spread(values) -> dict:
    """{"median", "min", "max", "spread"} of repeated runs' figures (spread = (max - min) / median)."""
    values = [float(v) for v in values]
    middle = statistics.median(values)
    return {"median": middle, "min": min(values), "max": max(values),
            "spread": (max(values) - min(values)) / middle if middle else 0.0, "runs": values}


def spread_text(values, fmt: str = "{:.2f}") -> str:
    s = spread(values)
    return (f"{fmt.format(s['median'])} (range {fmt.format(s['min'])}-{fmt.format(s['max'])} "
            f"over {len(values)} runs, spread {s['spread'] * 100:.0f} %)")


def _switched_off(setting: str, call):
    """``call()`` with the core's switch ``models.runtime.<setting>`` off, then back as it was."""
    import models.runtime

    switch = getattr(models.runtime, setting)
    previous = switch(False)
    try:
        return call()
    finally:
        switch(previous)


def without_onednn(call):
    """``call()`` with the core's oneDNN path off (``use_onednn(False)``), then back as it was."""
    return _switched_off("use_onednn", call)


def without_cuda_graphs(call):
    """``call()`` with fill-mask's body run by transformers, not replayed as a CUDA graph
    (``use_cuda_graphs(False)``: models/runtime/cuda_graphs.py), then back as it was."""
    return _switched_off("use_cuda_graphs", call)


def sync(device) -> None:
    """Wait for the device's queued work (GPU timings need it)."""
    import torch

    kind = getattr(device, "type", str(device))
    if kind == "cuda":
        torch.cuda.synchronize()
    elif kind == "mps":
        torch.mps.synchronize()


def rss_mib(pid: int | str = "self") -> float:
    """A process's resident memory now (VmRSS), in MiB."""
    with open(f"/proc/{pid}/status") as fh:
        return next(int(line.split()[1]) / 1024 for line in fh if line.startswith("VmRSS:"))


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (Linux)."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_until_idle(pid: int, idle_s: float = 3.0, below: float = 0.25, timeout_s: float = 600.0) -> float:
    """Seconds until the server has used less than ``below`` of a core for ``idle_s`` in a row.

    An idle Gradio server is not at zero: its queue loop polls, about 7 % of a core here;
    the warm-up uses more than one core while it works.

    A fresh app computes every tab's and lesson step's default view in the background right
    after start-up (components/shell/warm_views.py: some are short training runs); a class
    measured during that would time the warm-up, not the requests.
    """
    start = time.monotonic()
    quiet_since, last, then = None, cpu_seconds(pid), time.monotonic()
    while time.monotonic() - start < timeout_s:
        time.sleep(0.5)
        used, now = cpu_seconds(pid), time.monotonic()
        if (used - last) / (now - then) < below:
            quiet_since = quiet_since or then
            if now - quiet_since >= idle_s:
                return quiet_since - start
        else:
            quiet_since = None
        last, then = used, now
    return timeout_s


# --- the products alone: a floor for a call's time ---------------------------------------
# A call's matrix products with the model's weights (the linear layers and the vocabulary
# projection) are the part of its work that no reordering of the rest removes: in float32
# they are the same arithmetic in ours and in the reference. ``record_products`` runs the
# call once and notes each such product (the op, the weights it read, the shapes of its
# activations); ``Products.run`` replays those products alone, in the same order, on the
# same weights, with activations of the same shapes (buffers filled once, reused by shape:
# in the call, each product reads what the step before has just written). Its time, against
# the reference's in the same run, is the best ratio the call could reach with these
# products: everything else (attention, LayerNorm, tokenising, decoding, Python) at zero.
PRODUCT_OPS = ("mkldnn::_linear_pointwise", "aten::linear", "aten::addmm", "aten::mm")


class Products:
    """The products of one recorded call, in order; ``parts`` cut them where the call
    started another batch (an embedding look-up), for a replay on the core's workers."""

    def __init__(self):
        self.calls = []  # (op, args with activations as (shape, stride, dtype, device) specs, kwargs)
        self.starts = [0]  # index of each part's first product
        self._buffers = {}

    def __len__(self) -> int:
        return len(self.calls)

    def parts(self) -> list[range]:
        cuts = [s for s in self.starts if s < len(self.calls)] + [len(self.calls)]
        return [range(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]

    def _arg(self, arg):
        import torch

        if isinstance(arg, tuple) and len(arg) == 5 and arg[0] == "activation":
            _, shape, stride, dtype, device = arg
            key = (shape, stride, dtype, device)
            if key not in self._buffers:
                generator = torch.Generator().manual_seed(len(self._buffers))
                base = torch.randn(max(1, sum((n - 1) * s for n, s in zip(shape, stride)) + 1),
                                   generator=generator).to(device=device, dtype=dtype)
                self._buffers[key] = base.as_strided(shape, stride)
            return self._buffers[key]
        return arg

    def prepared(self, indexes=None) -> list:
        """The calls with their activation buffers made (outside any timing)."""
        indexes = range(len(self.calls)) if indexes is None else indexes
        return [(op, tuple(self._arg(a) for a in args), kwargs) for op, args, kwargs in
                (self.calls[i] for i in indexes)]

    @staticmethod
    def run(prepared) -> None:
        import torch

        with torch.inference_mode():
            for op, args, kwargs in prepared:
                op(*args, **kwargs)


def record_products(call, model):
    """(call's result, ``Products``): ``call()`` run once with its weight products noted.

    A tensor argument is a weight if its storage is one of ``model``'s parameters' or it is
    not a plain strided tensor (oneDNN's prepacked copies); any other tensor argument is an
    activation, kept as its shape. Records on this thread only (run the call where its
    forward runs on this thread: one torch thread for ``embed``).
    """
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    from models.runtime.onednn import prepacked_weights

    weights = {t.untyped_storage().data_ptr() for t in (*model.parameters(), *prepacked_weights(model))
               if t.layout == torch.strided}
    products = Products()

    def is_weight(t) -> bool:
        if t.layout != torch.strided:
            return True
        try:
            return t.untyped_storage().data_ptr() in weights
        except (RuntimeError, NotImplementedError):  # an opaque tensor (prepacked)
            return True

    def spec(arg):
        if isinstance(arg, torch.Tensor) and not is_weight(arg):
            return ("activation", tuple(arg.shape), tuple(arg.stride()), arg.dtype, str(arg.device))
        return arg

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            name = func._schema.name
            if name == "aten::embedding" and products.calls and products.starts[-1] != len(products.calls):
                products.starts.append(len(products.calls))  # another batch begins
            elif name in PRODUCT_OPS:
                products.calls.append((func, tuple(spec(a) for a in args), kwargs))
            return func(*args, **kwargs)

    with Recorder():
        result = call()
    return result, products


def runs_arguments(doc: str, argv=None):
    """``--runs`` (3), ``--threads`` (2, set on torch here) and ``--json``: the arguments of a
    bench that times repeated calls in one process; ``doc``: its module docstring."""
    import argparse

    import torch

    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    return args
