"""What every benchmark prints first (the machine and the versions it ran on), and the
same call with the core's oneDNN path off (its share of a ratio)."""

from __future__ import annotations

import os
import platform


def machine_line(device=None) -> str:
    import torch
    import transformers

    where = str(device) if device is not None else "cpu"
    if device is not None and getattr(device, "type", "") == "cuda":
        where = f"cuda ({torch.cuda.get_device_name(device)})"
    return (
        f"machine: {platform.machine()}, {os.cpu_count()} CPU cores, device {where}, "
        f"torch {torch.__version__} ({torch.get_num_threads()} threads), "
        f"transformers {transformers.__version__}, Python {platform.python_version()}"
    )


def without_onednn(call):
    """``call()`` with the core's oneDNN path off (``use_onednn(False)``), then back as it was."""
    from models import use_onednn

    previous = use_onednn(False)
    try:
        return call()
    finally:
        use_onednn(previous)
