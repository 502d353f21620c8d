"""Work split across the CPU's cores by hand, where one operator cannot use them well.

torch runs an operator on several threads (intra-op), but two kinds of work here do not
gain from it on a small CPU: many small forwards (each operator's threads wait on each
other) and a matrix-vector product (``addmv`` runs on one thread). ``cpu_workers()`` is one
thread per core, each running torch on one thread of its own (torch's intra-op count is
per calling thread, so the rest of the process keeps its own), shared by the callers below.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import torch

_WORKERS: ThreadPoolExecutor | None = None
_LOCK = threading.Lock()


def worker_count() -> int:
    """How many workers ``cpu_workers`` has: torch's thread count when first asked."""
    return max(1, torch.get_num_threads())


def cpu_workers() -> ThreadPoolExecutor:
    """The process's pool of single-threaded torch workers, one per core (made once)."""
    global _WORKERS
    with _LOCK:
        if _WORKERS is None:
            _WORKERS = ThreadPoolExecutor(
                max_workers=worker_count(),
                thread_name_prefix="cpu-worker",
                initializer=torch.set_num_threads,
                initargs=(1,),
            )
        return _WORKERS


def project_rows(weight: torch.Tensor, bias: torch.Tensor | None, rows: torch.Tensor) -> torch.Tensor:
    """``rows @ weight.T + bias`` for a few rows (M, H) against a tall weight (V, H): (M, V).

    Computed as ``weight @ rows.T``, which reads the weight in its stored order (the CPU
    library's ``rows @ weight.T`` takes a slow path for 2-8 rows), with the weight's rows
    split into one block per core on the CPU (a product this thin is bound by reading the
    weight, which one core does not do at the memory's full speed).
    """
    n = torch.get_num_threads()
    if weight.device.type != "cpu" or n < 2 or torch.is_grad_enabled():
        blocks = [(weight, bias)]
    else:
        size = -(-weight.shape[0] // n)
        biases = bias.split(size) if bias is not None else [None] * n
        blocks = list(zip(weight.split(size), biases))

    def block(part):
        w, b = part
        return (w @ rows.T) if b is None else torch.addmm(b.unsqueeze(1), w, rows.T)  # (V_i, M)

    if len(blocks) == 1:
        out = block(blocks[0])
    else:
        out = torch.cat(list(cpu_workers().map(block, blocks)))
    return out.T
