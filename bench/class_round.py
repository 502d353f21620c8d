"""Class round: a class sends its guesses for one blank while the teacher's page watches.

    .venv/bin/python -m bench.class_round [--students 30] [--replicas 2] [--url URL] [--seed 0]
                                          [--changes 0.3] [--repeat 1]

Every page speaks to the server as the browser does (``bench.classroom``'s ``Page``: the
session's ``queue/join`` with the page's own query string, answers on its event stream).
The teacher's page opens the round (the Class tab's button) and then fires the tab's
one-second timer, as the page does, until the class is done. Each student opens the round's
link (``?round=CODE``: the page's load events; the round's load hands the page its random
student id, which the browser keeps), waits 0-5 s, sends a word, and a share of them
(``--changes``) sends another word 1-3 s later (it must replace the first, not add to it).

Without ``--url`` the app runs as ``--replicas`` processes behind nginx
(``scripts/serve_replicas.py``), each page pinned to one by its route cookie, so the class and
the teacher are spread over the replicas and share one round through the database.
Prints the send latency (join to answer), the time from a guess's answer to the teacher's
view counting it (the count of students the view shows; a replaced guess does not move it),
and checks: 0 errors, every student counted once, the final counts equal the class's last
words, the teacher's view p95 <= 2 s.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

import httpx

from bench.classroom import SERVER_KEEP_ALIVE_S, AppConfig, Page, Stats
from bench.load import percentile

TEXT = "The students opened their [MASK] and started to write."
WORDS = ["books", "notebooks", "laptops", "bags", "eyes", "papers", "mouths", "minds"]  # one piece each, lower case
VISIBLE_TARGET_S = 2.0
TEACHER_TICK_S = 1.0  # the Class tab's gr.Timer
COUNT = re.compile(r"\*\*(\d+)\*\* students? ha(?:s|ve) answered")


@dataclass
class RoundStats:
    stats: Stats = field(default_factory=Stats)
    firsts: list[float] = field(default_factory=list)  # when each student's first guess was answered
    seen: list[tuple[float, int]] = field(default_factory=list)  # (when, students the teacher's view shows)
    final: dict[str, str] = field(default_factory=dict)  # student -> last word sent
    results: dict | None = None  # round_results at the end
    code: str = ""
    opened: asyncio.Event = field(default_factory=asyncio.Event)  # the round is open: the class may come

    def visible_delays(self) -> list[float]:
        """For the k-th first guess answered: time until a view showed at least k students."""
        delays = []
        for k, sent in enumerate(sorted(self.firsts), 1):
            shown = next((t for t, n in self.seen if n >= k and t >= sent), None)
            delays.append(float("inf") if shown is None else shown - sent)
        return delays


def _page(http, app, stats, query: str = "") -> Page:
    page = Page(http, app, stats, session=uuid.uuid4().hex[:11])
    page.query = query
    return page


async def teacher(http, app: AppConfig, out: RoundStats, done: asyncio.Event) -> None:
    """Opens the round, then fires the tab's timer every second until the class is done."""
    page = _page(http, app, out.stats)
    opened = await page.call(app.event("class_open"), [TEXT, None, 30])
    if opened is None:
        raise RuntimeError(f"the round did not open: {out.stats.errors}")
    teacher_state, shown = opened[0], opened[-1]
    out.code = teacher_state["code"]
    out.opened.set()
    while True:
        start = time.perf_counter()
        data = await page.call(app.event("class_refresh"), [teacher_state, shown])
        if data is not None:
            status = data[2]
            if isinstance(status, str) and COUNT.search(status):
                out.seen.append((time.perf_counter(), int(COUNT.search(status).group(1))))
            if isinstance(data[-1], str):
                shown = data[-1]
        if done.is_set():
            break
        await asyncio.sleep(max(0.0, TEACHER_TICK_S - (time.perf_counter() - start)))
    if page.stream is not None:
        page.stream.cancel()


async def student(number: int, http, app: AppConfig, out: RoundStats, seed: int, changes: float) -> None:
    rng = random.Random(seed * 1000 + number)
    page = _page(http, app, out.stats, f"?round={out.code}")
    arrived = None
    for event in load_events(app):  # as the page fires them when it opens
        data = await page.call(event, app.data(event))
        if event.api_name == "round_page_open":
            arrived = data
    if not arrived:
        return
    code, students = arrived[0], arrived[3]
    send = app.event("round_page_send")
    await asyncio.sleep(rng.uniform(0, 5))
    word = rng.choice(WORDS)
    if await page.call(send, [code, word, students]) is not None:
        out.firsts.append(time.perf_counter())
        out.final[students[code]] = word
    if rng.random() < changes:
        await asyncio.sleep(rng.uniform(1, 3))
        word = rng.choice([w for w in WORDS if w != word])
        if await page.call(send, [code, word, students]) is not None:
            out.final[students[code]] = word
    await page.call(app.event("round_page_poll"), [code])  # one tick of the page's timer
    if page.stream is not None:
        page.stream.cancel()


async def run_round(url: str, students: int, seed: int = 0, changes: float = 0.3) -> RoundStats:
    out = RoundStats()
    limits = httpx.Limits(max_connections=students * 4, max_keepalive_connections=students * 4,
                          keepalive_expiry=SERVER_KEEP_ALIVE_S - 1)
    async with httpx.AsyncClient(base_url=url.rstrip("/"), limits=limits, timeout=120) as http:
        app = AppConfig((await http.get("/config")).raise_for_status().json())
        done = asyncio.Event()
        watcher = asyncio.create_task(teacher(http, app, out, done))
        await asyncio.wait([asyncio.create_task(out.opened.wait()), watcher], return_when=asyncio.FIRST_COMPLETED)
        if watcher.done():
            watcher.result()  # raises why the round did not open
        await asyncio.gather(*(student(i, http, app, out, seed, changes) for i in range(students)))
        await asyncio.sleep(VISIBLE_TARGET_S + TEACHER_TICK_S)  # the teacher's view catches up
        done.set()
        await watcher
        final = await _page(http, app, out.stats).call(app.event("round_results"), [out.code])
        out.results = final[0] if final else None
    return out


def load_events(app: AppConfig) -> list:
    """The page's load events (the deep-link reader's, the round's), in the page's order."""
    return sorted((e for (_, kind), events in app.on_trigger.items() if kind == "load" for e in events),
                  key=lambda e: e.fn_index)


def check(out: RoundStats, students: int) -> list[str]:
    """What failed, in words (empty: the round passed)."""
    failures = []
    if out.stats.errors:
        failures.append(f"{len(out.stats.errors)} errors, e.g. {out.stats.errors[:3]}")
    expected = dict(Counter(out.final.values()))
    if out.results is None:
        failures.append("no results at the end")
    else:
        if out.results["students"] != students or len(out.final) != students:
            failures.append(f"{out.results['students']} students counted, {len(out.final)} sent, {students} in class")
        if out.results["counts"] != expected:
            failures.append(f"counts {out.results['counts']} != the class's last words {expected}")
    delays = out.visible_delays()
    if not delays or percentile(delays, 95) > VISIBLE_TARGET_S:
        failures.append(f"the teacher's view p95 {percentile(delays, 95) if delays else float('nan'):.2f} s "
                        f"> {VISIBLE_TARGET_S} s")
    return failures


def report(out: RoundStats, students: int, wall_s: float) -> list[str]:
    sends = out.stats.latency.get("round_page_send", [])
    delays = out.visible_delays()
    print(f"round {out.code}: {students} students, {len(sends)} guesses sent ({len(sends) - len(out.firsts)} "
          f"replacing one), {out.stats.http_requests} HTTP requests in {wall_s:.0f} s")
    for name, values in sorted(out.stats.latency.items()):
        print(f"  {name:<18} n {len(values):>4}  p50 {percentile(values, 50) * 1e3:>6.0f} ms  "
              f"p95 {percentile(values, 95) * 1e3:>6.0f} ms  max {max(values) * 1e3:>6.0f} ms")
    if delays:
        print(f"  teacher's view shows a new guess: p50 {percentile(delays, 50):.2f} s, p95 "
              f"{percentile(delays, 95):.2f} s, max {max(delays):.2f} s (target p95 <= {VISIBLE_TARGET_S} s)")
    failures = check(out, students)
    print("  PASS" if not failures else "  FAIL: " + "; ".join(failures))
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--replicas", type=int, default=2, help="app processes behind nginx (without --url)")
    parser.add_argument("--url", default=None, help="an app already running (else replicas are started)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--changes", type=float, default=0.3, help="share of students who change their guess")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    from bench.bench_common import machine_line
    from scripts.serve_replicas import Replicas

    print(machine_line())
    replicas = None if args.url else Replicas(args.replicas)
    url = args.url or replicas.start()
    failed = 0
    try:
        for run in range(args.repeat):
            start = time.perf_counter()
            out = asyncio.run(run_round(url, args.students, args.seed + run, args.changes))
            failed += bool(report(out, args.students, time.perf_counter() - start))
    finally:
        if replicas is not None:
            replicas.stop()
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
