"""Serve Encoder Lab from N app processes behind nginx, each session kept on one process.

    python -m scripts.serve_replicas [--replicas 2] [--port 8080] [--host 127.0.0.1]
                                     [--balance cookie|ip_hash] [--dir .replicas] [--device auto]
    make serve-replicas N=2

Starts N ``python app.py`` processes on free local ports (each with its share of the CPU
threads), writes ``DIR/nginx.conf`` from ``deploy/nginx.conf.template`` (DIR is
git-ignored), starts Debian's nginx on it in the foreground, and prints the address.
Ctrl-C (or SIGTERM) stops nginx and then every replica, and waits for them.

Sticky sessions: Gradio keeps a page's session (its event stream and queue entries) in the
process that served the page, so all of a page's requests must reach that process. The
default, ``cookie``, sets a random route cookie on the first response and hashes it to a
replica; ``ip_hash`` is what Gradio's nginx guide uses (a class behind one NAT address then
shares one replica). Each response names its replica in ``X-Encoder-Lab-Replica``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import string
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers import free_port, wait_for_http

REPO = Path(__file__).resolve().parent.parent
TEMPLATE = REPO / "deploy" / "nginx.conf.template"
BALANCE = {"cookie": "hash $encoder_lab_route consistent;", "ip_hash": "ip_hash;"}
REPLICA_HEADER = "x-encoder-lab-replica"


def nginx_config(directory: Path, ports, host: str, port: int, balance: str) -> str:
    from components.shell.server import MAX_REQUEST_BYTES

    servers = "\n".join(f"        server 127.0.0.1:{p} max_fails=0;" for p in ports)
    return string.Template(TEMPLATE.read_text(encoding="utf-8")).substitute(
        replicas=len(ports), dir=str(directory), servers=servers, balance=BALANCE[balance],
        host=host, port=port, max_body=MAX_REQUEST_BYTES)


class Replicas:
    """N app processes and nginx in front; a context manager (``with Replicas(2) as url``)."""

    def __init__(self, replicas: int = 2, port: int | None = None, host: str = "127.0.0.1",
                 balance: str = "cookie", directory: Path | None = None, device: str = "auto",
                 app_args=(), quiet: bool = True):
        if shutil.which("nginx") is None:
            raise SystemExit("nginx is not installed: `make nginx` (Debian: apt-get install -y nginx)")
        if replicas < 1:
            raise SystemExit("--replicas must be at least 1")
        self.replicas, self.host, self.balance, self.device = replicas, host, balance, device
        self.port = port or free_port()
        self.directory = (directory or REPO / ".replicas").resolve()
        self.app_args, self.quiet = list(app_args), quiet
        self.apps: list[subprocess.Popen] = []
        self.ports: list[int] = []
        self.nginx: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/"

    def start(self) -> str:
        for name in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
            folder = self.directory / "tmp" / name
            folder.mkdir(parents=True, exist_ok=True)
            folder.chmod(0o777)  # nginx's workers drop to an unprivileged user when started as root
        out = subprocess.DEVNULL if self.quiet else None
        try:
            for i in range(self.replicas):
                self.ports.append(free_port())
                self.apps.append(self._spawn(i))
            for port, app in zip(self.ports, self.apps):
                wait_for_http(f"http://127.0.0.1:{port}/", timeout_s=300, proc=app)
            conf = self.directory / "nginx.conf"
            conf.write_text(nginx_config(self.directory, self.ports, self.host, self.port, self.balance),
                            encoding="utf-8")
            self.nginx = subprocess.Popen(
                ["nginx", "-p", str(self.directory), "-e", str(self.directory / "error.log"), "-c", str(conf),
                 "-g", "daemon off;"], stdout=out, stderr=out)
            wait_for_http(self.url, timeout_s=30, proc=self.nginx)
        except BaseException:
            self.stop()
            raise
        return self.url

    def _spawn(self, i: int) -> subprocess.Popen:
        """Replica ``i``'s app process on its port (each with its share of the CPU threads)."""
        threads = max(1, (os.cpu_count() or 1) // self.replicas)
        out = subprocess.DEVNULL if self.quiet else None
        env = {**os.environ, "ENCODER_LAB_REPLICA": str(i), "OMP_NUM_THREADS": str(threads)}
        return subprocess.Popen(
            [sys.executable, "app.py", "--port", str(self.ports[i]), "--device", self.device, *self.app_args],
            cwd=REPO, env=env, stdout=out, stderr=out)

    def restart(self, i: int) -> None:
        """Stop replica ``i`` and start it again on the same port (nginx keeps sending to it)."""
        self.apps[i].terminate()
        self.apps[i].wait(timeout=30)
        self.apps[i] = self._spawn(i)
        wait_for_http(f"http://127.0.0.1:{self.ports[i]}/", timeout_s=300, proc=self.apps[i])

    def stop(self) -> None:
        """nginx first (no new requests), then each replica; each waited for."""
        if self.nginx is not None and self.nginx.poll() is None:
            self.nginx.send_signal(signal.SIGQUIT)  # graceful: finishes the requests in flight
            try:
                self.nginx.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.nginx.kill()
                self.nginx.wait()
        for proc in self.apps:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.apps:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", "-n", type=int, default=2)
    parser.add_argument("--port", type=int, default=8080, help="nginx's port")
    parser.add_argument("--host", default="127.0.0.1", help="nginx's address (0.0.0.0: every interface)")
    parser.add_argument("--balance", choices=sorted(BALANCE), default="cookie")
    parser.add_argument("--dir", type=Path, default=REPO / ".replicas", help="generated config, logs, pid")
    parser.add_argument("--device", default=os.environ.get("ENCODER_LAB_DEVICE", "auto"))
    args = parser.parse_args(argv)
    replicas = Replicas(args.replicas, args.port, args.host, args.balance, args.dir, args.device, quiet=False)
    stop = {"now": False}

    def on_signal(signum, frame):
        stop["now"] = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    url = replicas.start()
    print(f"Encoder Lab: {args.replicas} replicas (ports {', '.join(map(str, replicas.ports))}) behind nginx "
          f"at {url} ({args.balance} sessions); config {replicas.directory / 'nginx.conf'}. Ctrl-C stops.",
          flush=True)
    try:
        while not stop["now"]:
            if replicas.nginx.poll() is not None or any(p.poll() is not None for p in replicas.apps):
                print("a process exited: stopping the rest", file=sys.stderr)
                return 1
            time.sleep(0.5)
    finally:
        replicas.stop()
        print("stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
