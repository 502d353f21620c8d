"""A per-session limit: no page or API client floods the server for everyone else.

A page sends one live request at a time per event (``trigger_mode="always_last"``) and a
few more for a tab's views, so it never has many requests in the server at once. A script
can send hundreds at once from one session, and take every worker and queue place. So each
session may have at most ``SESSION_LIMIT`` requests in the server at once (waiting in the
queue or running); one more is refused at once with a message that says what to do.
``EncoderLabBlocks`` applies it: ``running`` around every event it processes, ``limit_queue``
on its queue's joins (refused like a full queue, HTTP 503, with this message).

Gradio's queued API route (``/gradio_api/call/<name>``) gives each call a new session, so
this bounds a page or a ``gradio_client`` session, not a client that opens a session per
call; the queue's own size (64) bounds those.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from contextlib import contextmanager

SESSION_LIMIT = int(os.environ.get("ENCODER_LAB_SESSION_LIMIT", 8))


class SessionBusy(Exception):
    """This session already has ``limit`` requests in the server."""


class SessionLimit:
    def __init__(self, limit: int = SESSION_LIMIT):
        self.limit = limit
        self._running: Counter = Counter()
        self._lock = threading.Lock()

    def message(self) -> str:
        return (f"Too many requests at once from this page or session: at most {self.limit} can be in "
                f"progress at the same time, and {self.limit} are. Wait for an answer before sending "
                f"the next request.")

    def running_now(self, session: str | None) -> int:
        with self._lock:
            return self._running.get(session, 0)

    @contextmanager
    def running(self, session: str | None, waiting: int = 0):
        """Count one request of ``session`` as running; SessionBusy if it already has the limit."""
        if session is None:
            yield
            return
        with self._lock:
            if self._running[session] + waiting >= self.limit:
                raise SessionBusy(self.message())
            self._running[session] += 1
        try:
            yield
        finally:
            with self._lock:
                self._running[session] -= 1
                if self._running[session] <= 0:
                    del self._running[session]


def waiting_in(queue, session: str | None) -> int:
    """How many of ``session``'s events wait in a Gradio queue (not yet started)."""
    if session is None:
        return 0
    return sum(1 for events in queue.event_queue_per_concurrency_id.values()
               for event in list(events.queue) if event.session_hash == session)


def limit_queue(queue, limit: SessionLimit) -> None:
    """Refuse a queue join from a session that already has ``limit.limit`` requests in."""
    push = queue.push

    async def limited_push(body, request, username):
        session = getattr(body, "session_hash", None)
        if session is not None and limit.running_now(session) + waiting_in(queue, session) >= limit.limit:
            return False, limit.message(), "queue_full"
        return await push(body, request, username)

    queue.push = limited_push


LIMIT = SessionLimit()
