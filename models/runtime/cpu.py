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
def _proc_cpuinfo(path: str = "/proc/cpuinfo") -> tuple[str | None, str, frozenset, str]:
    """(model name, vendor id, flags, "family F, model M, stepping S") of the first CPU in
    ``path``; (None, "", {}, "") without it. The numbers tell apart CPUs that print the same name
    (the 2-core machines' "AMD EPYC" says nothing of its generation; their speeds differ)."""
    model, vendor, flags, ids = None, "", frozenset(), {}
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                name, _, value = line.partition(":")
                name = name.strip()
                if name == "model name" and model is None:
                    model = value.strip()
                elif name == "vendor_id" and not vendor:
                    vendor = value.strip()
                elif name in ("cpu family", "model", "stepping") and name not in ids:
                    ids[name] = value.strip()
                elif name == "flags":
                    flags = frozenset(value.split())
                    break
    except OSError:  # not Linux
        pass
    label = ", ".join(f"{'family' if k == 'cpu family' else k} {ids[k]}"
                      for k in ("cpu family", "model", "stepping") if ids.get(k))
    return model, vendor, flags, label


def cpu_vendor() -> str:
    """The CPU's vendor id ("GenuineIntel", "AuthenticAMD", ...), "" where unknown."""
    return _proc_cpuinfo()[1]


def cpu_info() -> dict:
    """{"model", "vendor", "ids", "flags", "torch_capability"}: the CPU model, its vendor id, its
    family/model/stepping numbers ("" where unknown), the CPU_FLAGS it has, torch's ISA level."""
    model, vendor, flags, ids = _proc_cpuinfo()
    model = model or platform.processor() or platform.machine()
    try:
        import torch

        capability = torch.backends.cpu.get_cpu_capability()
    except (ImportError, AttributeError):
        capability = "unknown"
    return {"model": model, "vendor": vendor, "ids": ids, "flags": [f for f in CPU_FLAGS if f in flags],
            "torch_capability": capability}
