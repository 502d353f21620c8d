"""Server guards: bounded request bodies, ZeroGPU's ``spaces.GPU`` when it is there, and
per-request costs of Gradio's taken out (``lazy_session_configs``, ``inline_cheap_processing``)."""

from __future__ import annotations

import importlib.util

# The largest request body the server reads. Texts are capped at 20,000 characters by the
# core (at most 80 kB of UTF-8); 1 MiB leaves room for JSON and a list of sentences.
MAX_REQUEST_BYTES = 1 << 20


class RequestSizeLimit:
    """ASGI middleware: a request whose body exceeds ``max_bytes`` gets 413, unread."""

    def __init__(self, app, max_bytes: int = MAX_REQUEST_BYTES):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None:
            if not length.isdigit() or int(length) > self.max_bytes:
                return await self._refuse(send)
            return await self.app(scope, receive, send)
        if scope.get("method") in ("GET", "HEAD", "OPTIONS"):
            return await self.app(scope, receive, send)
        # No length given (a chunked body): read it up to the limit first, then replay it.
        messages, seen = [], 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            seen += len(message.get("body", b""))
            if seen > self.max_bytes:
                return await self._refuse(send)
            if not message.get("more_body", False):
                break

        async def replay():
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send):
        body = f"Request body too large: the limit is {self.max_bytes:,} bytes.".encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def queue_live_events() -> bool:
    """Whether per-keystroke events go through Gradio's queue: only under ZeroGPU.

    The queue's bookkeeping per event (its stream messages, estimations, the join request)
    cost more than the fill-mask forward itself: with 30 students typing, live fill-mask
    answered at p95 1,383 ms queued and 372 ms unqueued, back to back on the same busy
    machine (bench/classroom.py). Unqueued events still meet in one forward (the fill-mask
    micro-batcher) and the page still sends one at a time (``trigger_mode="always_last"``).
    ZeroGPU's ``spaces.GPU`` runs its functions through the queue, so there they stay queued.
    """
    return zero_gpu()


def zero_gpu() -> bool:
    """Whether the app runs under ZeroGPU (a Hugging Face Space with the ``spaces`` package)."""
    return importlib.util.find_spec("spaces") is not None


def settle_gpu_paths() -> bool:
    """Fill-mask's CUDA graphs off under ZeroGPU, on elsewhere (the core's default); returns
    whether they are on. ZeroGPU lends the GPU one call at a time (``spaces.GPU``): a graph
    captured with one call's device memory is not known to be valid in the next, and a capture
    each call would cost more than it saves. Not tried on a Space: off is the safe side."""
    from models.runtime import use_cuda_graphs

    on = not zero_gpu()
    use_cuda_graphs(on)
    return on


def on_gpu(fn):
    """ZeroGPU's ``spaces.GPU`` on a Hugging Face Space that has the package; else ``fn``."""
    if not zero_gpu():
        return fn
    import spaces

    return spaces.GPU(fn)


def limit_malloc_arenas(arenas: int = 2) -> bool:
    """Cap glibc's malloc arenas (as MALLOC_ARENA_MAX does) for a threaded server.

    Gradio answers requests from a pool of threads; glibc gives busy threads arenas of
    their own (up to 8 per core) and rarely returns their memory, so the server's RSS
    creeps up with traffic. Measured with bench/load.py (20 users x 25 requests a round):
    +130, +69, +78, +30 MB over four rounds by default; +81, +30, +1, +28 with 2 arenas.
    Linux/glibc only; elsewhere nothing happens. Returns whether the cap was set.
    """
    import ctypes
    import ctypes.util
    import os

    if "MALLOC_ARENA_MAX" in os.environ:  # the operator chose
        return False
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        libc = ctypes.CDLL(name)
        m_arena_max = -8  # from glibc's malloc.h
        return bool(libc.mallopt(m_arena_max, arenas))
    except (OSError, AttributeError):
        return False


class _LazyConfigs(dict):
    """A session's per-component configs, each computed when first read (see ``lazy_session_configs``).

    Reads in full (iteration, ``keys``, ``values``, ``items``, ``len``) see every component,
    in the order Gradio's eager dict has them (the app's components, then any added later).
    """

    def __init__(self, blocks_config, ids):
        super().__init__()
        self._blocks_config, self._ids = blocks_config, dict.fromkeys(ids)  # ordered

    def __missing__(self, key):
        if key not in self._ids:
            raise KeyError(key)
        config = self._blocks_config.config_for_block(key, [], self._blocks_config.blocks[key])
        self[key] = config
        return config

    def __contains__(self, key):
        return key in self._ids or dict.__contains__(self, key)

    def keys(self):
        return [*self._ids, *(k for k in dict.keys(self) if k not in self._ids)]

    def __iter__(self):
        return iter(self.keys())

    def __len__(self):
        return len(self.keys())

    def items(self):
        return [(k, self[k]) for k in self.keys()]

    def values(self):
        return [self[k] for k in self.keys()]

    def get(self, key, default=None):
        return self[key] if key in self else default


def lazy_session_configs() -> bool:
    """Gradio's per-session copy of every component's config, built when read, not at once.

    For each new session (each page, each ``gradio_client``, each call of the queued API
    route) Gradio's ``SessionState`` builds a config dict for every component of the app
    (``get_config``, ``inspect.signature`` per component): 26 % of the server's samples under
    a burst of 30 new pages (bench/classroom.py --mode burst, py-spy). Gradio reads that
    dict only for a component a request changes and for its own ``gr.DeepLinkButton`` (this
    app has its own links), so here each entry is computed when first read; a full read
    (``items``, iteration) computes the rest first, so every reader sees what it did before.
    For gradio 6.31's ``SessionState.__init__``; a test compares it with the original.
    Returns whether the patch was applied (once).
    """
    from gradio import state_holder

    cls = state_holder.SessionState
    if getattr(cls, "_encoder_lab_lazy", False):
        return False
    original = cls.__init__

    def __init__(self, blocks):
        self.blocks_config = state_holder.copy(blocks.default_config)
        self.config_values = _LazyConfigs(self.blocks_config,
                                          [k for k in self.blocks_config.blocks if k in blocks.blocks])
        self.state_data = {}
        self._state_ttl = {}
        self.is_closed = False
        self.STATE_TTL_WHEN_CLOSED = 1 if state_holder.os.getenv("GRADIO_IS_E2E_TEST", None) else 3600

    cls.__init__ = __init__
    cls._encoder_lab_original_init = original
    cls._encoder_lab_lazy = True
    return True


# Per value, a component's preprocess/postprocess that costs microseconds: plain type checks
# and copies (a box's text, a number's bounds, a chart already serialised to JSON, a small
# table given as rows). Anything else (a pandas frame, a figure object, an image, a file)
# still goes to a worker thread.
SMALL = 2000  # rows of a table, segments of a words strip


def _cheap(fn, args) -> bool:
    import gradio as gr
    from gradio.components.plot import PlotData

    block, name = getattr(fn, "__self__", None), getattr(fn, "__name__", "")
    if name not in ("preprocess", "postprocess") or len(args) != 1:
        return False
    value = args[0]
    if isinstance(block, (gr.Textbox, gr.Number, gr.Slider, gr.Checkbox, gr.Dropdown, gr.Radio, gr.Markdown,
                          gr.HTML)):
        return True
    if name == "preprocess":
        return False
    if isinstance(block, gr.Plot):
        return value is None or isinstance(value, PlotData)
    if isinstance(block, gr.Dataframe):
        return value is None or (isinstance(value, dict) and len(value.get("data", ())) <= SMALL)
    if isinstance(block, gr.HighlightedText):
        return value is None or (isinstance(value, list) and len(value) <= SMALL)
    return False


class _InlineCheap:
    """``anyio`` as ``gradio.blocks`` sees it: ``to_thread.run_sync`` runs a cheap component
    step (``_cheap``) on the event loop, everything else (handlers included) in a worker thread."""

    def __init__(self, anyio):
        from types import SimpleNamespace

        self._anyio = anyio
        self.to_thread = SimpleNamespace(run_sync=self._run_sync)

    def __getattr__(self, name):
        return getattr(self._anyio, name)

    async def _run_sync(self, fn, *args, **kwargs):
        if _cheap(fn, args):
            return fn(*args)
        return await self._anyio.to_thread.run_sync(fn, *args, **kwargs)


def inline_cheap_processing() -> bool:
    """Cheap pre- and postprocessing of inputs and outputs on the event loop, not in a thread.

    Gradio 6.31 runs every input's ``preprocess`` and every output's ``postprocess`` in a
    worker thread of its own (``anyio.to_thread.run_sync``): for the live fill-mask event
    that is 5 + 5 hand-offs per keystroke besides the handler's, each a wake-up of a worker
    and then of the event loop. Under a burst of 30 students (bench/classroom.py --mode
    burst, py-spy) those wake-ups (``call_soon_threadsafe``, ``_write_to_self``, the worker
    queue's ``notify``) were about a fifth of the server's samples, for steps that take
    microseconds (``str(payload)``, a bounds check). Here they run in place; the handler and
    any costly step (``_cheap`` says which) still run in a thread. For gradio 6.31's
    ``gradio.blocks``, whose only use of ``anyio`` is ``to_thread.run_sync``; a test checks
    that and the answers. Returns whether the patch was applied (once).
    """
    import functools

    from gradio import blocks
    from gradio.components import dataframe

    if isinstance(blocks.anyio, _InlineCheap):
        return False
    blocks.anyio = _InlineCheap(blocks.anyio)
    # A table's postprocess asks three times whether polars is installed, each a search of
    # sys.path (``importlib.util.find_spec``: 1.6 % of the samples in the same burst). The
    # answer does not change while the server runs.
    dataframe._is_polars_available = functools.cache(dataframe._is_polars_available)
    return True


def freeze_long_lived() -> int:
    """Collect, then move every object alive now out of the garbage collector's view.

    The server holds ~575,000 Python objects after building the app (torch, transformers,
    Gradio, the models), more after the warm-up. A full (oldest-generation) collection walks
    all of them with the interpreter lock held: 283-286 ms here, during which no request
    moves. The first burst of a class after a start triggered one: about 30 answers in flight
    were held ~350 ms together (p95 573-743 ms where the next bursts gave 327-430 ms; with
    the freeze, one run each here: 318 ms for the first burst, 283 ms for the second).
    (oneDNN's first use of each new batch shape costs 4-8 ms a forward too; running every
    shape of a burst in the warm-up took 4.4 s and 412 MB and did not change the first
    burst, so it is not done.)
    ``gc.freeze()`` keeps them out of later collections (a collection then takes ~0 ms);
    they are still freed by reference counting, so only cyclic garbage made before the
    freeze is kept (the collect before it frees what there is). Returns the objects frozen.
    """
    import gc

    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
