"""Server guards: bounded request bodies, and ZeroGPU's ``spaces.GPU`` when it is there."""

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
    return importlib.util.find_spec("spaces") is not None


def on_gpu(fn):
    """ZeroGPU's ``spaces.GPU`` on a Hugging Face Space that has the package; else ``fn``."""
    if importlib.util.find_spec("spaces") is None:
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
