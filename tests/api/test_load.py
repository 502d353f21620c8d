"""A small version of bench/load.py: concurrent users over every endpoint, no errors."""

from __future__ import annotations

from bench import load


def test_concurrent_users_get_no_errors(app_server):
    users = 4
    result = load.run_load(app_server, users=users, requests=len(load.MIX))
    assert result.errors == []
    # Every endpoint of the mix was called and answered, by every user.
    assert {name for name, _ in load.MIX} == set(result.latencies)
    assert all(len(v) == users for v in result.latencies.values())
