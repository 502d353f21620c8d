"""What CPU this is: its model name, vendor and the features that choose torch's CPU kernels.

Read from ``/proc/cpuinfo`` (Linux); elsewhere the model falls back to ``platform`` and the
vendor and flags are empty. The benchmarks print it (``bench/bench_common.py``), and the
fill-mask head picks its vocabulary product's layout by the vendor
(``models.mlm.masked_head.project``): MKL, torch's matrix library on x86-64, takes other
code paths on other vendors' CPUs.
"""

from __future__ import annotations

import functools
import platform

# The CPU features that decide which kernels torch's CPU libraries (MKL, oneDNN) run.
CPU_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8")


@functools.cache
def _proc_cpuinfo(path: str = "/proc/cpuinfo") -> tuple[str | None, str, frozenset]:
    """(model name, vendor id, flags) of the first CPU in ``path``; (None, "", {}) without it."""
    model, vendor, flags = None, "", frozenset()
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                name, _, value = line.partition(":")
                name = name.strip()
                if name == "model name" and model is None:
                    model = value.strip()
                elif name == "vendor_id" and not vendor:
                    vendor = value.strip()
                elif name == "flags":
                    flags = frozenset(value.split())
                    break
    except OSError:  # not Linux
        pass
    return model, vendor, flags


def cpu_vendor() -> str:
    """The CPU's vendor id ("GenuineIntel", "AuthenticAMD", ...), "" where unknown."""
    return _proc_cpuinfo()[1]


def cpu_info() -> dict:
    """{"model", "vendor", "flags", "torch_capability"}: the CPU model, its vendor id, the
    CPU_FLAGS it has, torch's ISA level."""
    model, vendor, flags = _proc_cpuinfo()
    model = model or platform.processor() or platform.machine()
    try:
        import torch

        capability = torch.backends.cpu.get_cpu_capability()
    except (ImportError, AttributeError):
        capability = "unknown"
    return {"model": model, "vendor": vendor, "flags": [f for f in CPU_FLAGS if f in flags],
            "torch_capability": capability}
