"""A throwaway PostgreSQL cluster for tests: Debian's ``postgresql`` (``make postgresql``).

The server runs as the ``postgres`` user (PostgreSQL refuses to run as root), in a
temporary folder that user owns, on a free port of 127.0.0.1 with trust authentication
for local connections, and is stopped and removed afterwards.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid

from helpers import free_port


def postgres_bin() -> str | None:
    """The folder of Debian's newest installed PostgreSQL server tools, or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return os.path.dirname(found[-1]) if found else None


def _as_postgres(*command: str) -> None:
    runner = [] if os.geteuid() == pwd.getpwnam("postgres").pw_uid else ["runuser", "-u", "postgres", "--"]
    subprocess.run([*runner, *command], check=True, capture_output=True, text=True, timeout=120)


@contextlib.contextmanager
def postgres_cluster():
    """Yields the server's URL (``postgresql://postgres@127.0.0.1:PORT/postgres``)."""
    tools = postgres_bin()
    if tools is None:
        raise RuntimeError("PostgreSQL is not installed: `make postgresql` (Debian: apt-get install -y postgresql)")
    folder = tempfile.mkdtemp(prefix="encoder-lab-pg-")
    os.chmod(folder, 0o755)
    user = pwd.getpwnam("postgres")
    os.chown(folder, user.pw_uid, user.pw_gid)
    data, port = os.path.join(folder, "data"), free_port()
    _as_postgres(f"{tools}/initdb", "-D", data, "-U", "postgres", "-A", "trust", "--no-sync")
    options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off"
    _as_postgres(f"{tools}/pg_ctl", "-D", data, "-o", options, "-l", os.path.join(folder, "log"), "-w", "start")
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        _as_postgres(f"{tools}/pg_ctl", "-D", data, "-m", "fast", "-w", "stop")
        shutil.rmtree(folder, ignore_errors=True)


def fresh_database(server_url: str) -> str:
    """A new empty database on the server; its URL."""
    import psycopg

    name = f"rounds_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return server_url.rsplit("/", 1)[0] + "/" + name
