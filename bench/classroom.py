"""Classroom: 30 students typing in Fill-mask with live prediction, a share opening other tabs.

    .venv/bin/python -m bench.classroom [--students 30] [--seconds 60] [--url URL] [--seed 0]
                                        [--mode type|burst|api-burst] [--burst-requests 10] [--repeat 3]
                                        [--profile FILE]

Each student is a light asyncio client (one process, httpx) that speaks to the server as
the browser page does (Gradio's ``sse_v3`` protocol): a session hash, ``queue/join`` for
queued events, ``run/<api_name>`` for unqueued ones, answers on the session's
``queue/data`` event stream. Event numbers, inputs and default values come from the app's
own ``/config``, so the requests are the page's requests. Per keystroke the page fires every
event bound to ``text.change`` (today: the live prediction and the clickable-words strip),
and honours each event's ``trigger_mode`` as the page does: with ``always_last``, while one
request of that event is out, newer keystrokes only replace the one to send next.

Students type sentences with a mask at 3-8 keys per second (seeded), pause, clear the box
and type the next; every fifth student also opens Attention (the event its "Show attention"
button fires: the views, the sliders and the statistics in one) and Embeddings (Compare),
then goes back to typing.

Without ``--url`` the app is started as a user would (``python app.py`` on a free port) and
its CPU time is reported beside the clients'. Prints, per endpoint: requests, p50 / p95 /
max latency (join to answer), max queue wait (join to start), errors; and the time from a
student's last keystroke to the prediction for the finished sentence ("settle"). Targets:
0 errors, live fill-mask p95 <= 300 ms, no request starved (none waits over 2 s to start).

``--mode burst``: the teacher's "now everyone try it": every student opens the page, waits
for the whole class, then sends ``--burst-requests`` live predictions back to back (each
after the previous answer), all students at the same moment (target p95 <= 500 ms).
``--mode api-burst``: one queued call each on ``/gradio_api/call/fill_mask`` (what curl and
notebooks use: a POST, then the call's event stream), all at once (target p95 <= 1 s).
Runs ``--repeat`` times (default 3, seeds ``seed``, ``seed+1``, ...) against the same server
and ends with the median and range of the target's p95 over the runs. ``--profile FILE``
records the server with py-spy meanwhile and prints where its time went (shares).
Behind ``scripts/serve_replicas.py`` each page sends the route cookie a browser would have
and the report says which replica answered each session (all must be pinned to one).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import resource
import statistics
import threading
import time
import uuid
from dataclasses import dataclass, field

import httpx

from bench.bench_common import cpu_seconds, rss_mib, wait_until_idle
from bench.load import percentile, start_app
from scripts.serve_replicas import REPLICA_HEADER

ROUTE_COOKIE = "encoder_lab_route"  # deploy/nginx.conf.template hashes it to a replica

FILL_MASK_TARGET_S = 0.3  # p95 of the live fill-mask answer while the class types
STARVED_S = 2.0  # a request that waits longer than this to start is starved
BURST_TARGET_S = 0.5  # p95 of the live answers when the whole class fires at once
API_BURST_TARGET_S = 1.0  # p95 of one queued API call each, all at once
MODES = ("type", "burst", "api-burst")
LIVE = "fill_mask_live"
# uvicorn's idle keep-alive (Gradio's server keeps the default). The clients expire their idle
# connections a second before it: at equal limits (httpx's default is also 5 s) a request can
# leave on a connection the server is closing and fail with a ReadError. A browser resends a
# request that fails so on a reused connection; these clients do not, so they must not reuse
# one that old.
SERVER_KEEP_ALIVE_S = 5.0

SENTENCES = [
    "The [MASK] sat on the mat and looked out of the window.",
    "Paris is the [MASK] of France and its largest city.",
    "She opened the [MASK] and walked into the garden.",
    "A [MASK] is an animal that barks at strangers.",
    "The children played [MASK] in the park after school.",
    "He drank a cup of [MASK] before the lecture began.",
    "The [MASK] rises in the east and sets in the west.",
    "Water boils at one hundred [MASK] at sea level.",
]


# --- the app as the page sees it -----------------------------------------------------------


@dataclass(frozen=True)
class Event:
    fn_index: int
    api_name: str | None
    inputs: tuple[int, ...]
    queued: bool
    always_last: bool


class AppConfig:
    """Events and component defaults from ``/config`` (what the page builds its requests from)."""

    def __init__(self, config: dict):
        self.prefix = config.get("api_prefix", "/gradio_api")
        self.values = {c["id"]: c.get("props", {}).get("value") for c in config["components"]}
        self.buttons = {c.get("props", {}).get("value"): c["id"] for c in config["components"]
                        if c.get("type") == "button"}
        self.events = {}
        self.on_trigger: dict[tuple, list[Event]] = {}
        self.after: dict[int, list[Event]] = {}
        for dep in config["dependencies"]:
            event = Event(dep["id"], dep.get("api_name"), tuple(dep["inputs"]), bool(dep.get("queue", True)),
                          dep.get("trigger_mode") == "always_last")
            if event.api_name:
                self.events[event.api_name] = event
            for target, kind in dep["targets"]:
                self.on_trigger.setdefault((target, kind), []).append(event)
            if dep.get("trigger_after") is not None and dep.get("backend_fn", True):  # a js-only step runs in the page
                self.after.setdefault(dep["trigger_after"], []).append(event)

    def event(self, api_name: str) -> Event:
        return self.events[api_name]

    def clicked(self, label: str) -> Event:
        """The event the page fires when the button labelled ``label`` is clicked."""
        return self.on_trigger[(self.buttons[label], "click")][0]

    def triggered_by(self, event: Event, kind: str) -> list[Event]:
        """Every event the page fires when ``event``'s first input changes (``kind``: "change")."""
        return self.on_trigger.get((event.inputs[0], kind), [])

    def chained(self, event: Event) -> list[Event]:
        """Events the page fires after ``event`` succeeds (``.success`` / ``.then``)."""
        return self.after.get(event.fn_index, [])

    def data(self, event: Event, overrides: dict[int, object] | None = None) -> list:
        overrides = overrides or {}
        return [overrides.get(i, self.values.get(i)) for i in event.inputs]


# --- what is measured ------------------------------------------------------------------------


@dataclass
class Stats:
    latency: dict[str, list[float]] = field(default_factory=dict)  # join to answer
    wait: dict[str, list[float]] = field(default_factory=dict)  # join to start (queued only)
    settle: list[float] = field(default_factory=list)  # last keystroke to its prediction
    errors: list[str] = field(default_factory=list)
    keystrokes: int = 0
    http_requests: int = 0
    replicas: dict[str, set] = field(default_factory=dict)  # session -> replicas that answered it

    def seen(self, session: str, resp) -> None:
        """Note which replica answered (the header nginx adds in scripts/serve_replicas.py)."""
        replica = resp.headers.get(REPLICA_HEADER)
        if replica:
            self.replicas.setdefault(session, set()).add(replica)

    def add(self, name: str, seconds: float, wait: float | None) -> None:
        self.latency.setdefault(name, []).append(seconds)
        if wait is not None:
            self.wait.setdefault(name, []).append(wait)


# --- one browser page --------------------------------------------------------------------------


class Page:
    """One student's page: a session, its event stream, and the page's trigger modes."""

    def __init__(self, http: httpx.AsyncClient, app: AppConfig, stats: Stats, session: str | None = None):
        self.http, self.app, self.stats = http, app, stats
        self.session = session or uuid.uuid4().hex[:11]
        # behind the load balancer, the route cookie a browser gets with the page
        self.headers = {"cookie": f"{ROUTE_COOKIE}={self.session}"}
        self.pending: dict[str, tuple[asyncio.Future, list]] = {}  # event_id -> (answer, [started])
        self.early: dict[str, list[tuple[dict, float]]] = {}  # messages read before their join returned
        self.stream: asyncio.Task | None = None
        self.busy: dict[int, asyncio.Task] = {}  # always_last: the request out per event
        self.next_data: dict[int, list] = {}  # always_last: the latest data to send next
        self.query = ""  # the page's own query string ("?round=K7MXQA"), which the page adds to each join

    async def call(self, event: Event, data: list, name: str | None = None) -> list | None:
        """One request as the page sends it; its answer's data, or None on an error (recorded
        under ``name``: by default the event's API name)."""
        name = name or event.api_name or f"fn {event.fn_index}"
        body = {"data": data, "event_data": None, "fn_index": event.fn_index, "trigger_id": None,
                "session_hash": self.session}
        start = time.perf_counter()
        try:
            if not event.queued:
                self.stats.http_requests += 1
                resp = await self.http.post(f"{self.app.prefix}/run/{event.api_name or 'predict'}", json=body,
                                            headers=self.headers)
                self.stats.seen(self.session, resp)
                resp.raise_for_status()
                self.stats.add(name, time.perf_counter() - start, None)
                return resp.json().get("data")
            answer = asyncio.get_running_loop().create_future()
            started: list[float] = []
            self.stats.http_requests += 1
            resp = await self.http.post(f"{self.app.prefix}/queue/join{self.query}", json=body,
                                        headers=self.headers)
            self.stats.seen(self.session, resp)
            resp.raise_for_status()
            event_id = resp.json()["event_id"]
            self.pending[event_id] = (answer, started)
            for msg, seen in self.early.pop(event_id, []):  # the stream was quicker than the join
                self._on_message(msg, seen)
            self._listen()
            msg = await answer
        except Exception as exc:  # noqa: BLE001  (recorded, not raised: a load test counts)
            self.stats.errors.append(f"{name}: {type(exc).__name__}: {exc}"[:300])
            return None
        if not msg.get("success"):
            self.stats.errors.append(f"{name}: {json.dumps(msg.get('output'))[:300]}")
            return None
        self.stats.add(name, time.perf_counter() - start, (started[0] if started else time.perf_counter()) - start)
        for follow in self.app.chained(event):  # as the page does after a success
            await self.call(follow, self.app.data(follow))
        return msg["output"].get("data")

    def fire(self, event: Event, data: list) -> asyncio.Task | None:
        """A trigger: always_last events send at most one request at a time, the latest data."""
        if not event.always_last:
            return asyncio.create_task(self.call(event, data))
        if event.fn_index in self.busy:
            self.next_data[event.fn_index] = data
            return self.busy[event.fn_index]
        task = asyncio.create_task(self._send_latest(event, data))
        self.busy[event.fn_index] = task
        return task

    async def _send_latest(self, event: Event, data: list) -> None:
        try:
            while data is not None:
                await self.call(event, data)
                data = self.next_data.pop(event.fn_index, None)
        finally:
            self.busy.pop(event.fn_index, None)

    def _listen(self) -> None:
        if self.stream is None or self.stream.done():
            self.stream = asyncio.create_task(self._read_stream())

    async def _read_stream(self) -> None:
        """The session's event stream; reopened while answers are still owed (as the page does)."""
        try:
            await self._read_streams()
        except Exception as exc:  # noqa: BLE001  (every answer still owed fails: none hangs)
            for answer, _ in self.pending.values():
                answer.set_exception(exc)
            self.pending.clear()

    async def _read_streams(self) -> None:
        while self.pending:
            self.stats.http_requests += 1
            async with self.http.stream("GET", f"{self.app.prefix}/queue/data",
                                        params={"session_hash": self.session}, headers=self.headers) as resp:
                self.stats.seen(self.session, resp)
                resp.raise_for_status()
                async for line in resp.aiter_lines():
                    if not line.startswith("data:"):
                        continue
                    msg = json.loads(line[5:])
                    if msg.get("msg") == "close_stream":
                        break
                    self._on_message(msg, time.perf_counter())

    def _on_message(self, msg: dict, seen: float) -> None:
        kind, event_id = msg.get("msg"), msg.get("event_id")
        if kind in ("process_starts", "process_completed") and event_id not in self.pending:
            self.early.setdefault(event_id, []).append((msg, seen))
        elif kind == "process_starts":
            self.pending[event_id][1].append(seen)
        elif kind == "process_completed":
            answer, _ = self.pending.pop(event_id)
            answer.set_result(msg)
        elif kind == "unexpected_error":
            for answer, _ in self.pending.values():
                answer.set_exception(RuntimeError(msg.get("message")))
            self.pending.clear()


# --- students --------------------------------------------------------------------------------


async def typist(page: Page, rng: random.Random, deadline: float, first: str) -> None:
    """Types sentences key by key until the deadline; records the settle time of each."""
    app, stats = page.app, page.stats
    live = app.event(LIVE)
    text_id = live.inputs[0]
    sentence = first
    while time.perf_counter() < deadline:
        text = ""
        for k, ch in enumerate(sentence):
            if k:
                await asyncio.sleep(1 / rng.uniform(3, 8))  # between two keys
            text += ch
            stats.keystrokes += 1
            for event in app.triggered_by(live, "change"):
                page.fire(event, app.data(event, {text_id: text}))
        typed = time.perf_counter()  # the last key: the settle clock starts here (it started a key's pause later)
        while live.fn_index in page.busy:  # the answer for the finished sentence
            await asyncio.shield(page.busy[live.fn_index])
        stats.settle.append(time.perf_counter() - typed)
        await asyncio.sleep(rng.uniform(1, 3))  # reads the predictions
        sentence = rng.choice(SENTENCES)
        stats.keystrokes += 1  # select all + delete: one change
        for event in app.triggered_by(live, "change"):
            page.fire(event, app.data(event, {text_id: ""}))


SHOW_ATTENTION = "Show attention"  # the Attention tab's button; its event is private (no API name)


async def explorer(page: Page) -> None:
    """Opens Attention (its button's event, then what is chained on it) and Embeddings."""
    app = page.app
    show = app.clicked(SHOW_ATTENTION)
    await page.call(show, app.data(show), name="attention click")
    await page.call(app.event("similarity"), app.data(app.event("similarity")))


async def student(number: int, http: httpx.AsyncClient, app: AppConfig, stats: Stats,
                  seconds: float, seed: int) -> None:
    rng = random.Random(seed * 1000 + number)
    await asyncio.sleep(rng.uniform(0, 2))  # a class does not open the page in one millisecond
    page = Page(http, app, stats, session=f"{rng.getrandbits(44):011x}")
    live = app.event(LIVE)
    await page.call(live, app.data(live))  # the page's load event
    deadline = time.perf_counter() + seconds
    first = SENTENCES[number % len(SENTENCES)]
    if number % 5 == 0:  # a share of the class opens other tabs half-way through
        half = time.perf_counter() + seconds / 2
        await typist(page, rng, half, first)
        await explorer(page)
    await typist(page, rng, deadline, first)
    while page.busy:  # the last answers
        await asyncio.gather(*list(page.busy.values()))
    if page.stream is not None:
        page.stream.cancel()


async def burst_student(number: int, http: httpx.AsyncClient, app: AppConfig, stats: Stats, seed: int,
                        loaded: asyncio.Barrier, requests: int) -> None:
    """Opens the page, waits for the whole class, then sends ``requests`` live predictions back to back."""
    rng = random.Random(seed * 1000 + number)
    page = Page(http, app, stats, session=f"{rng.getrandbits(44):011x}")
    live = app.event(LIVE)
    await page.call(live, app.data(live))  # the page's load event
    # the last keystrokes of typing a sentence, each text this student's own (so that the
    # view cache answers none of them: the burst measures the server's work)
    sentence = f"{rng.choice(SENTENCES)} Student {number} typed this."
    await loaded.wait()  # "now everyone try it"
    for k in range(requests):
        text = sentence[: len(sentence) - (requests - 1 - k)]
        await page.call(live, app.data(live, {live.inputs[0]: text}))
    if page.stream is not None:
        page.stream.cancel()


async def api_caller(number: int, http: httpx.AsyncClient, app: AppConfig, stats: Stats, seed: int,
                     loaded: asyncio.Barrier) -> None:
    """One queued API call, as curl or a notebook makes it: POST /call/fill_mask, then its stream."""
    rng = random.Random(seed * 1000 + number)
    event = app.event("fill_mask")
    data = app.data(event, {event.inputs[0]: f"{rng.choice(SENTENCES)} Caller {number} asked."})
    cookie = {"cookie": f"{ROUTE_COOKIE}={rng.getrandbits(44):011x}"}
    await loaded.wait()
    name = "api fill_mask"
    start = time.perf_counter()
    try:
        stats.http_requests += 2
        resp = await http.post(f"{app.prefix}/call/fill_mask", json={"data": data}, headers=cookie)
        resp.raise_for_status()
        event_id = resp.json()["event_id"]
        outcome = None
        async with http.stream("GET", f"{app.prefix}/call/fill_mask/{event_id}", headers=cookie) as stream:
            stream.raise_for_status()
            async for line in stream.aiter_lines():
                if line.startswith("event:"):
                    outcome = line[6:].strip()
                elif line.startswith("data:") and outcome in ("complete", "error"):
                    if outcome == "error":
                        raise RuntimeError(line[5:].strip()[:200])
                    break
        if outcome != "complete":
            raise RuntimeError(f"the stream ended without an answer ({outcome})")
    except Exception as exc:  # noqa: BLE001  (recorded, not raised)
        stats.errors.append(f"{name}: {type(exc).__name__}: {exc}"[:300])
        return
    stats.add(name, time.perf_counter() - start, None)


async def run_class(url: str, students: int, seconds: float, seed: int, mode: str = "type",
                    burst_requests: int = 10) -> Stats:
    stats = Stats()
    limits = httpx.Limits(max_connections=students * 4, max_keepalive_connections=students * 4,
                          keepalive_expiry=SERVER_KEEP_ALIVE_S - 1)
    async with httpx.AsyncClient(base_url=url.rstrip("/"), limits=limits, timeout=120) as http:
        app = AppConfig((await http.get("/config")).raise_for_status().json())
        warm = Page(http, app, Stats())  # load the models before measuring
        for event in (app.event(LIVE), app.clicked(SHOW_ATTENTION), app.event("similarity")):
            await warm.call(event, app.data(event))
        if mode == "type":
            await asyncio.gather(*(student(i, http, app, stats, seconds, seed) for i in range(students)))
        elif mode == "burst":
            loaded = asyncio.Barrier(students)
            await asyncio.gather(*(burst_student(i, http, app, stats, seed, loaded, burst_requests)
                                   for i in range(students)))
        else:
            loaded = asyncio.Barrier(students)
            await asyncio.gather(*(api_caller(i, http, app, stats, seed, loaded) for i in range(students)))
    return stats


# --- report ----------------------------------------------------------------------------------


def report(stats: Stats, wall_s: float, students: int, mode: str = "type") -> bool:
    print(f"{'endpoint':<18} {'n':>6} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'max wait ms':>12}")
    for name, values in sorted(stats.latency.items()):
        waits = stats.wait.get(name, [0.0])
        print(f"{name:<18} {len(values):>6} {percentile(values, 50) * 1e3:>8.0f} "
              f"{percentile(values, 95) * 1e3:>8.0f} {max(values) * 1e3:>8.0f} {max(waits) * 1e3:>12.0f}")
    if stats.settle:
        print(f"{'settle (typed→shown)':<18} {len(stats.settle):>6} {percentile(stats.settle, 50) * 1e3:>8.0f} "
              f"{percentile(stats.settle, 95) * 1e3:>8.0f} {max(stats.settle) * 1e3:>8.0f}")
    n = sum(len(v) for v in stats.latency.values())
    per_key = (f"; {stats.http_requests / stats.keystrokes:.2f} HTTP requests per keystroke (all kinds)"
               if stats.keystrokes else f"; {stats.http_requests} HTTP requests")
    print(f"{students} students, {stats.keystrokes} keystrokes, {n} answered requests in {wall_s:.0f} s{per_key}")
    for e in stats.errors[:10]:
        print("  error:", e)
    name, target = {"type": (LIVE, FILL_MASK_TARGET_S), "burst": (LIVE, BURST_TARGET_S),
                    "api-burst": ("api fill_mask", API_BURST_TARGET_S)}[mode]
    p95 = percentile(stats.latency.get(name, [float("inf")]), 95)
    max_wait = max((max(w) for w in stats.wait.values()), default=0.0)
    checks = [
        ("errors", f"{len(stats.errors)}", "0", not stats.errors),
        (f"{mode} {name} p95", f"{p95 * 1e3:.0f} ms", f"<= {target * 1e3:.0f} ms", p95 <= target),
        ("starvation (max wait)", f"{max_wait * 1e3:.0f} ms", f"<= {STARVED_S * 1e3:.0f} ms",
         max_wait <= STARVED_S),
    ]
    if stats.replicas:  # behind the load balancer: each session on one replica
        pinned = sum(len(r) == 1 for r in stats.replicas.values())
        used = sorted(set().union(*stats.replicas.values()))
        print(f"replicas: {len(used)} answered ({', '.join(used)}); "
              f"{pinned} of {len(stats.replicas)} sessions on one replica each")
        checks.append(("sessions pinned", f"{pinned} of {len(stats.replicas)}", "all",
                       pinned == len(stats.replicas)))
    for what, figure, target, ok in checks:
        print(f"SUMMARY classroom {what}: {figure} (target {target}): {'pass' if ok else 'FAIL'}")
    return all(ok for *_, ok in checks)


def run_class_blocking(url: str, students: int, seconds: float, seed: int, mode: str = "type",
                       burst_requests: int = 10) -> Stats:
    """``run_class`` from synchronous code, on an event loop of its own thread.

    ``asyncio.run`` refuses to start where the calling thread already has a running loop
    (a Playwright sync session leaves one behind in a test process); a thread of its own
    never has one.
    """
    out: dict = {}

    def target() -> None:
        try:
            out["stats"] = asyncio.run(run_class(url, students, seconds, seed, mode, burst_requests))
        except BaseException as exc:  # re-raised in the caller's thread
            out["error"] = exc

    worker = threading.Thread(target=target, name="classroom", daemon=True)
    worker.start()
    worker.join()
    if "error" in out:
        raise out["error"]
    return out["stats"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=60, help="typing time per student")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--url", default=None, help="an app already running (else one is started)")
    parser.add_argument("--pid", type=int, default=None, help="with --url: the server's process id, for its CPU time")
    parser.add_argument("--mode", choices=MODES, default="type",
                        help="type: students typing (default); burst: all at once, --burst-requests live "
                             "predictions back to back each; api-burst: one queued /call/fill_mask each, all at once")
    parser.add_argument("--burst-requests", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3, help="runs against the same server, seeds seed..")
    parser.add_argument("--profile", metavar="FILE", default=None,
                        help="record the server with py-spy during the runs (raw, 50 Hz, --nonblocking) into FILE, "
                             "then print its shares (bench/profile_shares.py); the latencies are then not figures")
    args = parser.parse_args()
    from bench.bench_common import machine_line, spread_text

    print(machine_line())
    proc, url = (None, args.url) if args.url else start_app()
    spy = None
    try:
        server_pid = proc.pid if proc else args.pid
        if proc is not None:  # an app started here: its start-up warm-up ends before the class
            print(f"server idle {wait_until_idle(proc.pid):.0f} s after it answered (start-up warm-up done)")
        if args.profile:
            spy = start_profile(server_pid, args.profile)
        target = {"type": LIVE, "burst": LIVE, "api-burst": "api fill_mask"}[args.mode]
        p95s, errors = [], 0
        for run in range(1, args.repeat + 1):
            print(f"\nrun {run} of {args.repeat} (seed {args.seed + run - 1})")
            server_cpu = cpu_seconds(server_pid) if server_pid else None
            before = resource.getrusage(resource.RUSAGE_SELF)
            start = time.perf_counter()
            stats = run_class_blocking(url, args.students, args.seconds, args.seed + run - 1, args.mode,
                                       args.burst_requests)
            wall = time.perf_counter() - start
            report(stats, wall, args.students, args.mode)
            p95s.append(percentile(stats.latency.get(target, [float("inf")]), 95) * 1e3)
            errors += len(stats.errors)
            own = resource.getrusage(resource.RUSAGE_SELF)
            clients = own.ru_utime + own.ru_stime - before.ru_utime - before.ru_stime
            line = f"CPU seconds: the {args.students} clients {clients:.1f}"
            if server_pid:
                used = cpu_seconds(server_pid) - server_cpu
                line += (f", server {used:.1f} "
                         f"({used * 1e3 / max(sum(map(len, stats.latency.values())), 1):.0f} ms a request); "
                         f"server resident memory after the run {rss_mib(server_pid) / 1024:.2f} GiB")
            print(line + f", over {wall:.0f} s of wall time")
        if args.repeat > 1:
            print(f"\nSUMMARY classroom {args.mode} {target} p95 over {args.repeat} runs: "
                  f"{spread_text(p95s, '{:.0f}')} ms; errors in all runs: {errors}")
    finally:
        if spy is not None:
            stop_profile(spy, args.profile)
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)


def start_profile(pid: int | None, path: str):
    """py-spy recording the server ``pid`` into ``path`` (what bench/profile_shares.py reads)."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    if pid is None:
        raise SystemExit("--profile needs the server's process: start it here (no --url) or give --pid")
    exe = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    spy = subprocess.Popen([exe, "record", "--pid", str(pid), "--format", "raw", "--rate", "50", "--nonblocking",
                            "-o", path], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(1)  # attached before the first request
    if spy.poll() is not None:
        raise SystemExit(f"py-spy did not start: {spy.stderr.read().strip()[:300]}")
    return spy


def stop_profile(spy, path: str) -> None:
    import signal

    from bench import profile_shares

    spy.send_signal(signal.SIGINT)  # py-spy writes its file on Ctrl-C
    spy.wait(timeout=60)
    print(f"\nprofile of the server ({path}; shares, valid on a busy machine too):")
    profile_shares.main([path, "--top", "15"])


if __name__ == "__main__":
    main()
