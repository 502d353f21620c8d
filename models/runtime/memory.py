"""One memory budget for everything the server keeps: models, cached results, kept runs, indexes.

Each part that keeps something (the model cache, each result cache, the trained heads and
sentence encoders kept by id, the retrieval indexes) registers here as a *holder*: it lists its
items as ``Entry`` (last use, key, bytes) and drops one on request. After anything new is kept,
``MEMORY.settle()`` drops the least recently used items, whichever part holds them, until the
total fits the budget. The item just kept always stays, and so does each visitor's latest run
until nothing else is left to drop: a class of thirty keeps every student's newest head while
the memory allows, instead of a fixed count for everyone.

The budget: ``ENCODER_LAB_MEMORY_MB`` (or ``ENCODER_LAB_CACHE_MB``), else half of the memory this
process may use (the cgroup's limit where one is set, else the machine's ``MemTotal``). The other
half is the runtime's own (Python, torch, Gradio, the request's working tensors).
"""

from __future__ import annotations

import contextvars
import itertools
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from collections import OrderedDict
from typing import Any, Callable, Protocol

from ..errors import InputError

MACHINE_SHARE = 0.5  # of the memory this process may use, when no budget is set
_TICKS = itertools.count(1)


def tick() -> int:
    """A stamp for "used now": later uses get larger stamps (one clock for every holder)."""
    return next(_TICKS)


@dataclass(frozen=True)
class Entry:
    """One item a holder keeps, as the budget sees it."""

    used: int  # ``tick()`` of its last use
    key: object
    nbytes: int
    latest_of_visitor: bool = False  # a visitor's newest run: dropped only when nothing else is left


class Holder(Protocol):
    part: str  # what it keeps, for the Models tab ("models", "attention results", "trained heads"...)

    def entries(self) -> list[Entry]: ...

    def drop(self, key) -> None: ...


@dataclass(frozen=True)
class MemoryReport:
    """What the server keeps now, against its budget (bytes)."""

    budget_bytes: int
    source: str  # where the budget comes from, in words
    used_bytes: int
    parts: tuple[tuple[str, int, int], ...]  # (part, items, bytes), every registered holder
    dropped: int  # items dropped to stay within the budget since the start


def machine_memory_bytes() -> tuple[int, str]:
    """(bytes this process may use, where that figure comes from): the cgroup limit, else MemTotal."""
    total, where = 0, "this machine's memory"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                total = int(line.split()[1]) * 1024
    except OSError:
        total = 8 * 2**30
        where = "an assumed 8 GiB (no /proc/meminfo)"
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            raw = Path(limit_file).read_text().strip()
        except OSError:
            continue
        if raw.isdigit() and 0 < int(raw) < total:
            return int(raw), "this container's memory limit"
    return total, where


def default_budget() -> tuple[int, str]:
    """(budget bytes, where it comes from, in words)."""
    for name in ("ENCODER_LAB_MEMORY_MB", "ENCODER_LAB_CACHE_MB"):
        mb = os.environ.get(name, "").strip()
        if mb:
            return int(float(mb) * 2**20), name
    total, where = machine_memory_bytes()
    return int(total * MACHINE_SHARE), f"half of {where} ({total / 2**30:.1f} GiB)"


def gib(nbytes: int) -> str:
    return f"{nbytes / 2**30:.2f} GiB"


class MemoryBudget:
    """The server's one budget; holders register, ``settle`` keeps their total within it."""

    def __init__(self, budget_bytes: int | None = None, source: str = "set by the caller"):
        if budget_bytes is None:
            budget_bytes, source = default_budget()
        self.budget_bytes, self.source = budget_bytes, source
        self._holders: list[Holder] = []
        self._lock = threading.Lock()  # taken before any holder's own lock, never after
        self.dropped = 0

    def register(self, holder: Holder) -> Holder:
        with self._lock:
            self._holders.append(holder)
        return holder

    def unregister(self, holder: Holder) -> None:
        with self._lock:
            self._holders = [h for h in self._holders if h is not holder]

    def used_bytes(self) -> int:
        return sum(e.nbytes for h in list(self._holders) for e in h.entries())

    def check_fits(self, nbytes: int, what: str) -> None:
        """An ``InputError`` when ``what`` (e.g. "bert-large in float32") alone exceeds the budget."""
        if nbytes > self.budget_bytes:
            raise InputError(
                f"model: {what} needs about {gib(nbytes)}, more than this server's memory budget of "
                f"{gib(self.budget_bytes)} ({self.source}). Choose a smaller model, or ask the operator to set "
                "ENCODER_LAB_MEMORY_MB higher where the machine has the memory.")

    def settle(self, keep: tuple[Holder, object] | None = None, need: int = 0) -> list[tuple[str, object]]:
        """Drop least recently used items until the total plus ``need`` fits; never ``keep``
        ((holder, key): the item just kept). Returns (part, key) of each item dropped."""
        dropped = []
        with self._lock:
            holders = list(self._holders)
            entries = [(e, h) for h in holders for e in h.entries()]
            total = sum(e.nbytes for e, _ in entries) + need
            order = sorted((pair for pair in entries if keep is None or (pair[1], pair[0].key) != keep),
                           key=lambda pair: (pair[0].latest_of_visitor, pair[0].used))
            for entry, holder in order:
                if total <= self.budget_bytes:
                    break
                holder.drop(entry.key)
                total -= entry.nbytes
                dropped.append((holder.part, entry.key))
            self.dropped += len(dropped)
        return dropped

    def report(self) -> MemoryReport:
        with self._lock:
            holders = list(self._holders)
        parts = {}
        for h in holders:
            items = h.entries()
            n, b = parts.get(h.part, (0, 0))
            parts[h.part] = (n + len(items), b + sum(e.nbytes for e in items))
        rows = tuple((part, n, b) for part, (n, b) in parts.items())
        return MemoryReport(self.budget_bytes, self.source, sum(b for _, _, b in rows), rows, self.dropped)


MEMORY = MemoryBudget()
_SHARED_CACHES: list["ModelCache"] = []  # the caches of the budget, whose models a trained run may share


class ModelCache:
    """An LRU cache of loaded models (or results) bounded by a memory budget (bytes).

    Each key is loaded once: concurrent callers of the same key wait for the first load.
    The most recent item always stays, even when it alone exceeds the budget. ``part`` (e.g.
    "models", "attention results") makes the cache one holder of the server's budget
    (``memory.MEMORY``): its items then count there too, and are dropped there by last use.
    """

    def __init__(self, budget_bytes: int, part: str | None = None):
        self.budget_bytes, self.part = budget_bytes, part
        self._items: OrderedDict[tuple, Any] = OrderedDict()
        self._used: dict[tuple, int] = {}
        self._lock = threading.Lock()
        self._key_locks: dict[tuple, threading.Lock] = {}
        self.loads = 0  # how many times a loader actually ran (for tests and stats)
        if part:
            MEMORY.register(self)
            _SHARED_CACHES.append(self)

    def _hit(self, key: tuple):
        self._items.move_to_end(key)
        self._used[key] = tick()
        return self._items[key]

    def get(self, key: tuple, loader: Callable[[], Any]) -> Any:
        with self._lock:
            if key in self._items:
                return self._hit(key)
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                if key in self._items:  # loaded by another thread while we waited
                    return self._hit(key)
            try:
                loaded = loader()
            except BaseException:
                with self._lock:  # waiters keep their reference; no lock outlives its load
                    self._key_locks.pop(key, None)
                raise
            with self._lock:  # stored and unlocked at once: a newcomer finds the item
                self.loads += 1
                self._items[key] = loaded
                self._used[key] = tick()
                self._key_locks.pop(key, None)
                self._evict()
            if self.part:  # outside this cache's lock: the budget takes its own first
                MEMORY.settle(keep=(self, key))
            return loaded

    def _evict(self) -> None:
        while len(self._items) > 1 and self.total_bytes() > self.budget_bytes:
            old, _ = self._items.popitem(last=False)
            self._used.pop(old, None)

    def total_bytes(self) -> int:
        return sum(item.nbytes for item in self._items.values())

    def entries(self) -> list[Entry]:
        with self._lock:
            return [Entry(self._used.get(k, 0), k, item.nbytes) for k, item in self._items.items()]

    def drop(self, key: tuple) -> None:
        with self._lock:
            self._items.pop(key, None)
            self._used.pop(key, None)

    def keys(self) -> list[tuple]:
        with self._lock:
            return list(self._items)

    def peek(self, key: tuple) -> Any:
        """The item kept under ``key``, or None; loads nothing and leaves its last use as it was."""
        with self._lock:
            return self._items.get(key)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._used.clear()



def memory_budget() -> MemoryReport:
    """The server's memory budget and what it keeps now: models, cached results, kept runs, indexes
    (bytes per part; ``ENCODER_LAB_MEMORY_MB`` sets the budget, else half the machine's memory)."""
    return MEMORY.report()


def checkpoint_nbytes(weights: Path, itemsize: int) -> int:
    """What a checkpoint's tensors take once loaded with ``itemsize`` bytes a value (4: float32,
    2: float16), read from its safetensors header (no tensor is read); else the file's size."""
    import json
    import math

    try:
        size = weights.stat().st_size
        with open(weights, "rb") as fh:
            length = int.from_bytes(fh.read(8), "little")
            header = json.loads(fh.read(length)) if 0 < length < min(size, 100 * 2**20) else None
        return sum(math.prod(t["shape"]) * itemsize for name, t in header.items() if name != "__metadata__")
    except (OSError, ValueError, TypeError, AttributeError, KeyError):  # not a safetensors file: its size
        return weights.stat().st_size if weights.is_file() else 0


# Who a run started now belongs to: the visitor's session, set by the app around a request
# (``models.run_owner``); None in a notebook or for the Lessons' shared runs.
VISITOR: contextvars.ContextVar[str | None] = contextvars.ContextVar("visitor", default=None)


class KeptRuns:
    """Runs trained in this process (heads, sentence encoders), kept by id within the server's
    budget: each visitor's newest run stays until nothing else is left to drop. An id that was
    dropped gets a message saying so, and how to train it again."""

    def __init__(self, part: str, what: str, how: str, on_drop: Callable[[str, Any], None] | None = None):
        """``what``: "trained head" (for messages); ``how``: how to train one (``train_how``);
        ``on_drop(run_id, value)``: what else to free when a run goes (e.g. its folder)."""
        self.part, self.what, self.how, self.on_drop = part, what, how, on_drop
        self._items: OrderedDict[str, tuple[Any, int, str | None, int, int]] = OrderedDict()
        self._dropped: OrderedDict[str, None] = OrderedDict()  # the last 1000 ids dropped
        self._lock = threading.Lock()
        MEMORY.register(self)

    def keep(self, run_id: str, value, nbytes: int) -> str:
        stamp = tick()
        with self._lock:
            self._items[run_id] = (value, int(nbytes), VISITOR.get(), stamp, stamp)
        MEMORY.settle(keep=(self, run_id))
        return run_id

    def get(self, run_id):
        with self._lock:
            if isinstance(run_id, str) and run_id in self._items:
                value, nbytes, owner, kept, _ = self._items[run_id]
                self._items[run_id] = (value, nbytes, owner, kept, tick())
                return value
            dropped = isinstance(run_id, str) and run_id in self._dropped
        raise InputError(self.gone(run_id, dropped))

    def gone(self, run_id, dropped: bool) -> str:
        if dropped:
            return (f"The {self.what} {run_id!r} was dropped to keep the server within its memory budget "
                    f"({gib(MEMORY.budget_bytes)}, shared by every visitor): {self.how}.")
        return (f"No {self.what} {run_id!r} in this process (one trained here is kept while the server's "
                f"memory budget allows, until it restarts): {self.how}.")

    def was_dropped(self, run_id: str) -> bool:
        with self._lock:
            return run_id in self._dropped

    def items(self) -> list[tuple[str, Any]]:
        with self._lock:
            return [(k, v[0]) for k, v in self._items.items()]

    def entries(self) -> list[Entry]:
        with self._lock:
            newest: dict[str, tuple[int, str]] = {}
            for k, (_, _, owner, kept, _) in self._items.items():
                if owner is not None and kept > newest.get(owner, (0, ""))[0]:
                    newest[owner] = (kept, k)
            latest = {k for _, k in newest.values()}
            return [Entry(used, k, nbytes, k in latest) for k, (_, nbytes, _, _, used) in self._items.items()]

    def drop(self, run_id: str) -> None:
        with self._lock:
            found = self._items.pop(run_id, None)
            if found is None:
                return
            self._dropped[run_id] = None
            while len(self._dropped) > 1000:
                self._dropped.popitem(last=False)
        if self.on_drop is not None:
            self.on_drop(run_id, found[0])

    def clear(self) -> None:
        with self._lock:
            items, self._items = list(self._items.items()), OrderedDict()
        for run_id, found in items if self.on_drop else ():
            self.on_drop(run_id, found[0])


def own_bytes(module) -> int:
    """The bytes of a trained module's tensors that no cached model shares (a probe on a cached
    encoder: its head; a fine-tuned copy: all of it)."""
    shared = set()
    for cache in list(_SHARED_CACHES):
        for item in list(cache._items.values()):
            model = getattr(item, "model", None)
            if model is not None:
                shared.update(t.data_ptr() for t in itertools.chain(model.parameters(), model.buffers()))
    return sum(t.numel() * t.element_size() for t in itertools.chain(module.parameters(), module.buffers())
               if t.data_ptr() not in shared)
