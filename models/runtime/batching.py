"""Micro-batching: concurrent calls that arrive while the model is busy share its next forward.

A server answers each request in a thread of its own. On a CPU a small encoder's forward for
one short text is bound by reading the weights, not by arithmetic, so the forward for 20
texts costs a few times one text's, not 20 times. ``MicroBatcher`` lets the threads meet:

* a call that finds the batcher idle runs at once, alone: no added wait for a single user;
* calls that arrive while a forward runs queue up; when it ends, the first of them leads
  the next forward, which takes every queued call of the same group (e.g. the same model),
  up to a budget, and hands each caller its own result.

Only one forward runs at a time per batcher, so concurrent requests never oversubscribe
the CPU cores with several forwards' threads. Each result is the one the caller would get
alone, up to float rounding (the batch pads with an attention mask; tested against the
unbatched call and transformers' pipeline).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Iterator, Sequence


@dataclass
class _Slot:
    group: Hashable
    item: Any
    cost: int
    wake: threading.Event = field(default_factory=threading.Event)
    lead: bool = False  # handed the next forward
    done: bool = False
    result: Any = None
    error: BaseException | None = None


class MicroBatcher:
    """Runs ``run_batch(items) -> results`` (one result per item, in order) for concurrent callers.

    max_cost: the most a batch may cost (e.g. padded tokens; each call states its cost as
    its item's size, a batch costs ``len(batch) * max(cost)``). A call over the budget
    alone still runs, alone.
    """

    def __init__(self, run_batch: Callable[[Sequence[Any]], Sequence[Any]], max_cost: int, max_items: int = 64):
        self._run_batch = run_batch
        self.max_cost = max_cost
        self.max_items = max_items
        self._lock = threading.Lock()  # guards _pending and _busy
        self._pending: list[_Slot] = []
        self._busy = False  # a forward runs (or a leader is being woken); invariant: _pending => _busy
        self.batches = 0  # forwards run, and calls served (for tests and the bench)
        self.calls = 0

    def submit(self, group: Hashable, item: Any, cost: int = 1) -> Any:
        """The result of ``item`` (run alone or with others of ``group``); re-raises its error."""
        slot = _Slot(group, item, max(1, int(cost)))
        with self._lock:
            self._pending.append(slot)
            if not self._busy:
                self._busy = slot.lead = True
        if not slot.lead:
            slot.wake.wait()
        if not slot.done:  # this thread leads the next forward; its own slot is first in line
            self._lead()
        if slot.error is not None:
            raise slot.error
        return slot.result

    def _take(self) -> list[_Slot]:
        """The next batch: the first queued call and those of its group behind it, within budget."""
        first = self._pending[0]
        batch, widest = [], 0
        for slot in self._pending:
            if slot.group != first.group:
                continue
            wider = max(widest, slot.cost)
            if batch and (len(batch) >= self.max_items or wider * (len(batch) + 1) > self.max_cost):
                break
            batch.append(slot)
            widest = wider
        taken = {id(s) for s in batch}
        self._pending = [s for s in self._pending if id(s) not in taken]
        return batch

    def _lead(self) -> None:
        with self._lock:
            batch = self._take()
        try:
            results = self._run_batch([s.item for s in batch])
            if len(results) != len(batch):
                raise RuntimeError(f"a batch of {len(batch)} gave {len(results)} results")
            for slot, result in zip(batch, results):
                slot.result = result
        except BaseException as exc:  # every caller of this batch gets the error, none hangs
            for slot in batch:
                slot.error = exc
        with self._lock:
            self.batches += 1
            self.calls += len(batch)
            if self._pending:  # hand the next forward to the first in line
                self._pending[0].lead = True
                self._pending[0].wake.set()
            else:
                self._busy = False
        for slot in batch:
            slot.done = True
            slot.wake.set()


# --- two forwards at once on a CPU ------------------------------------------------------
# A small encoder's forward on a 2-core CPU spends ~88 % of its time in matrix products that
# already run near the cores' peak with two threads; the rest (attention, LayerNorm, copies,
# Python between ops) leaves a core idle while the other works. Two batches in flight on two
# threads, each with its share of the cores, fill those gaps (the same vectors, bit for bit:
# each batch's maths does not depend on the thread; measured in BENCHMARKS.md, row 2). On
# accelerators the batches stay one after another.
CPU_FORWARD_WORKERS = 2
_pool_lock = threading.Lock()
_pool = None


def _forward_pool():
    """Two threads, each running torch's kernels on its share of the cores (one each on two).

    Each worker sets its own intra-op thread count before its first op (torch reads it per
    thread, once; libgomp keeps it per thread), then the process's setting is put back, so
    no other thread changes. With two threads each instead, every worker kept an OpenMP team
    of its own: more OpenMP threads than cores, and libgomp then makes every team, the main
    thread's included, sleep sooner between parallel regions; sentence-transformers' encode
    in the same process took 18 % longer after one ``embed`` (1.73 against 1.46 s).
    """
    global _pool
    with _pool_lock:
        if _pool is None:
            from concurrent.futures import ThreadPoolExecutor

            import torch

            threads = torch.get_num_threads()
            each = max(1, threads // CPU_FORWARD_WORKERS)
            started = threading.Barrier(CPU_FORWARD_WORKERS + 1, timeout=60)

            def init():
                torch.set_num_threads(each)  # (for a moment also what a new thread would read)
                torch.ones(1 << 20).sum()  # a first parallel op here: torch now keeps this thread's count
                started.wait()

            pool = ThreadPoolExecutor(CPU_FORWARD_WORKERS, thread_name_prefix="encoder-lab-forward",
                                      initializer=init)
            for _ in range(CPU_FORWARD_WORKERS):  # start every worker now
                pool.submit(int)
            started.wait()
            torch.set_num_threads(threads)  # the process's own setting back; the workers keep theirs
            _pool = pool
        return _pool


def map_forwards(run: Callable[[Any], Any], batches: Sequence[Any], device) -> Iterator[Any]:
    """``run(batch)`` for each batch, results in order: on a CPU with 2+ threads two at a time.

    At most ``CPU_FORWARD_WORKERS + 1`` results wait to be read, so a long input does not
    hold every batch's states at once. ``run`` must open its own thread-local contexts
    (``inference_mode``, ``onednn_linears``): it may run on a pool thread.
    """
    import torch

    if getattr(device, "type", str(device)) != "cpu" or len(batches) < 2 or torch.get_num_threads() < 2:
        yield from map(run, batches)
        return
    pool = _forward_pool()
    ahead = CPU_FORWARD_WORKERS + 1
    pending = [pool.submit(run, b) for b in batches[:ahead]]
    try:
        for k in range(len(batches)):
            result = pending[k].result()
            pending[k] = None  # drop the reference: the caller owns the result now
            if k + ahead < len(batches):
                pending.append(pool.submit(run, batches[k + ahead]))
            yield result
    finally:  # the caller stopped early or a batch failed: nothing queued runs for nobody
        for future in pending:
            if future is not None:
                future.cancel()
