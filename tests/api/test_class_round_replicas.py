"""A class round through two replicas behind nginx (scripts/serve_replicas.py): one round in
one database, whichever process each page reaches, and nothing lost when a replica restarts."""

from __future__ import annotations

import asyncio
import shutil
from collections import Counter

import httpx
import pytest

from bench import class_round
from bench.classroom import AppConfig, Stats
from scripts.serve_replicas import Replicas

pytestmark = pytest.mark.skipif(shutil.which("nginx") is None, reason="nginx is not installed (make nginx)")


@pytest.fixture(scope="module")
def replicas(tmp_path_factory):
    group = Replicas(2, directory=tmp_path_factory.mktemp("replicas"))
    group.start()
    yield group
    group.stop()


def test_a_small_class_through_two_replicas_is_counted_once_each(replicas):
    out = asyncio.run(class_round.run_round(replicas.url, students=8, seed=3, changes=0.5))
    assert class_round.check(out, 8) == []  # 0 errors, each counted once, last words, view p95 <= 2 s
    assert len(out.stats.latency["round_page_send"]) > 8  # some students changed their guess
    assert len({r for served in out.stats.replicas.values() for r in served}) == 2


async def restarted_mid_round(replicas: Replicas) -> tuple[Stats, dict, dict]:
    """Six students send, replica 0 restarts, three of them change their guess and two more arrive."""
    stats = Stats()
    async with httpx.AsyncClient(base_url=replicas.url.rstrip("/"), timeout=120) as http:
        app = AppConfig((await http.get("/config")).raise_for_status().json())
        teacher = class_round._page(http, app, stats)
        code = (await teacher.call(app.event("class_open"), [class_round.TEXT, None, 30]))[0]["code"]

        async def arrive():
            page = class_round._page(http, app, stats, f"?round={code}")
            return page, (await page.call(app.event("round_page_open"), [{}]))[3]  # the browser's ids

        async def send(page, ids, word):
            await page.call(app.event("round_page_send"), [code, word, ids])

        first = [await arrive() for _ in range(6)]
        for page, ids in first:
            await send(page, ids, "books")
        await asyncio.to_thread(replicas.restart, 0)
        sent = {ids[code]: "books" for _, ids in first}
        for page, ids in first[:3]:  # the same browsers, the same ids: a change, not a new student
            await send(page, ids, "bags")
            sent[ids[code]] = "bags"
        for page, ids in [await arrive() for _ in range(2)]:
            await send(page, ids, "eyes")
            sent[ids[code]] = "eyes"
        results = (await teacher.call(app.event("round_results"), [code]))[0]
    return stats, results, sent


def test_a_replica_restarted_mid_round_loses_nothing(replicas):
    stats, results, sent = asyncio.run(restarted_mid_round(replicas))
    assert stats.errors == []
    assert results["students"] == len(sent) == 8
    assert results["counts"] == dict(Counter(sent.values())) == {"books": 3, "bags": 3, "eyes": 2}
    served = {r for pages in stats.replicas.values() for r in pages}
    assert len(served) == 2  # the class was spread over both, the restarted one included
