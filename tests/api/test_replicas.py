"""Two app processes behind nginx (scripts/serve_replicas.py): a small class through it, no
errors, and every session kept on one replica (the header nginx adds names it)."""

from __future__ import annotations

import shutil

import httpx
import pytest

from bench import classroom
from scripts.serve_replicas import REPLICA_HEADER, Replicas

pytestmark = pytest.mark.skipif(shutil.which("nginx") is None, reason="nginx is not installed (make nginx)")


def test_a_class_through_two_replicas_gets_answers_with_every_session_pinned(tmp_path):
    with Replicas(2, directory=tmp_path / "replicas") as url:
        stats = classroom.run_class_blocking(url, students=6, seconds=3, seed=2)
        probe = url + "replica-probe"  # a path the app does not serve: a cheap 404, through nginx all the same
        first = httpx.get(probe, timeout=60)  # a browser's first request: no route cookie yet
        # 24 pages with their own route cookies: the cookie's hash spreads them over both
        answered = {httpx.get(probe, headers={"cookie": f"{classroom.ROUTE_COOKIE}=page{i}"}, timeout=60)
                    .headers[REPLICA_HEADER] for i in range(24)}
        again = {httpx.get(probe, headers={"cookie": f"{classroom.ROUTE_COOKIE}=page7"}, timeout=60)
                 .headers[REPLICA_HEADER] for _ in range(4)}
    assert stats.errors == []
    assert len(stats.latency[classroom.LIVE]) >= 6
    assert len(stats.replicas) == 6  # every student's session went through nginx
    assert all(len(replicas) == 1 for replicas in stats.replicas.values()), stats.replicas
    assert first.headers["set-cookie"].startswith(f"{classroom.ROUTE_COOKIE}=")
    assert len(answered) == 2
    assert len(again) == 1
