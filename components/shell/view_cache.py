"""Views computed once per process: what a tab or a lesson step shows on arrival.

Every tab opens on its default example already computed, and a class of thirty opening
the page at once must not cost thirty forward passes. ``cached_view`` keeps the last few
results of a view function by its arguments: the first caller computes, callers with the
same arguments meanwhile wait for that one result (a lock per key), later ones get it at
once. Errors are not kept: the next call tries again.

No Gradio here. The cached values are handed to Gradio as they are; its postprocessing
reads figures and frames and never modifies them.
"""

from __future__ import annotations

import functools
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Hashable

DEFAULT_SIZE = 16  # results kept per view: the defaults and the last few links followed
# computations per view function (qualified name), for tests that check what came from the cache
COMPUTED: Counter = Counter()


def _key(args: tuple, kwargs: dict) -> Hashable:
    def frozen(value):
        if isinstance(value, (list, tuple)):
            return tuple(frozen(v) for v in value)
        if isinstance(value, dict):
            return tuple(sorted((k, frozen(v)) for k, v in value.items()))
        if isinstance(value, float) and value.is_integer():
            return int(value)  # a slider's 3.0 and an API caller's 3 are one view
        return value

    return frozen(args), frozen(kwargs)


def cached_view(maxsize: int = DEFAULT_SIZE) -> Callable:
    """Decorator: keep the ``maxsize`` most recent results of ``fn`` by its arguments."""

    def decorate(fn: Callable) -> Callable:
        results: OrderedDict = OrderedDict()
        # one lock guards the table; one lock per key makes concurrent callers with the same
        # arguments wait for a single computation instead of each running the model
        table_lock = threading.Lock()
        key_locks: dict = {}

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            key = _key(args, kwargs)
            with table_lock:
                if key in results:
                    results.move_to_end(key)
                    return results[key]
                lock = key_locks.setdefault(key, threading.Lock())
            with lock:
                with table_lock:
                    if key in results:  # computed by the caller we waited for
                        return results[key]
                try:
                    COMPUTED[fn.__qualname__] += 1
                    value = fn(*args, **kwargs)
                except BaseException:
                    with table_lock:
                        key_locks.pop(key, None)
                    raise
                with table_lock:  # the result in, then the key's lock out: no gap to compute twice
                    results[key] = value
                    key_locks.pop(key, None)
                    while len(results) > maxsize:
                        results.popitem(last=False)
                return value

        def cache_clear() -> None:
            with table_lock:
                results.clear()

        wrapper.cache_clear = cache_clear
        wrapper.cache_size = lambda: len(results)
        return wrapper

    return decorate
