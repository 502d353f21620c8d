"""A small version of bench/classroom.py: students typing with live prediction, no errors."""

from __future__ import annotations

import asyncio

from bench import classroom


def test_students_typing_get_answers_and_no_errors(app_server):
    stats = asyncio.run(classroom.run_class(app_server, students=5, seconds=4, seed=1))
    assert stats.errors == []
    # The page's requests: the live prediction for keystrokes, and (student 0) the other tabs.
    assert {classroom.LIVE, "attention click", "similarity"} <= set(stats.latency)
    assert len(stats.latency[classroom.LIVE]) >= 5  # at least each page's load event
    assert stats.keystrokes > 0 and stats.settle  # typed sentences got their prediction
    # always_last: never more live requests than keystrokes (plus one per page load)
    assert len(stats.latency[classroom.LIVE]) <= stats.keystrokes + 5
