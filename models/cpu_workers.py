"""Work split across the CPU's cores by hand, where torch's own threads do not use them well.

torch runs an operator on several threads (intra-op), but many small forwards (short
sentences' batches) gain little from it on a small CPU: each operator's threads wait on each
other. ``cpu_workers()`` is one thread per core, each running torch on one thread of its own
(torch's intra-op count is per calling thread, so the rest of the process keeps its own):
``embed`` runs its batches side by side on them.
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
