"""bertviz's JavaScript (require.js, d3, jQuery), served by the app itself at ``/vendor/``.

bertviz asks a CDN for these three libraries, so its views render blank offline. The app
serves them instead, from ``assets/vendor/``: the very npm tarballs that
``package-lock.json`` pins, committed with the repository (their licences are inside them
and beside them, ``assets/vendor/licenses/``). Each tarball is checked against the lock's
sha512 ``integrity`` before its one file is read out of it, so what the browser gets is
byte for byte the published package; nothing is installed, so a start without ``make``
(a Hugging Face Space) draws every view.

The route is fixed (``/vendor/<name>.js``): its URL says nothing about the machine.
"""

from __future__ import annotations

import base64
import io
import hashlib
import json
import tarfile
from functools import lru_cache
from pathlib import Path

VENDOR_DIR = Path(__file__).resolve().parents[2] / "assets" / "vendor"
ROUTE = "vendor"  # served at /vendor/<name>.js
# The name bertviz's page uses -> (npm package, the file inside its tarball).
SCRIPTS = {
    "require": ("requirejs", "package/require.js"),
    "d3": ("d3", "package/dist/d3.min.js"),
    "jquery": ("jquery", "package/dist/jquery.min.js"),
}


@lru_cache(maxsize=1)
def _lock() -> dict:
    return json.loads((VENDOR_DIR / "package-lock.json").read_text(encoding="utf-8"))["packages"]


def pinned(package: str) -> tuple[str, str]:
    """(version, integrity) of an npm package as ``package-lock.json`` pins it."""
    entry = _lock()[f"node_modules/{package}"]
    return entry["version"], entry["integrity"]


def tarball(package: str) -> Path:
    """Where the pinned tarball of ``package`` is committed (npm's own file name)."""
    return VENDOR_DIR / f"{package}-{pinned(package)[0]}.tgz"


def integrity(data: bytes, algorithm: str = "sha512") -> str:
    """A Subresource-Integrity string, as npm writes it in a lock file."""
    return f"{algorithm}-" + base64.b64encode(hashlib.new(algorithm, data).digest()).decode()


def verified_tarball(package: str) -> bytes | None:
    """The tarball's bytes if it is there and matches the lock's integrity, else None."""
    path = tarball(package)
    if not path.is_file():
        return None
    data = path.read_bytes()
    expected = pinned(package)[1]
    return data if integrity(data, expected.split("-", 1)[0]) == expected else None


@lru_cache(maxsize=None)
def script(name: str) -> bytes | None:
    """The JavaScript bertviz calls ``name`` ("require", "d3", "jquery"), or None when its
    tarball is missing or altered."""
    package, member = SCRIPTS[name]
    data = verified_tarball(package)
    if data is None:
        return None
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        return archive.extractfile(member).read()


def library_urls() -> dict[str, str] | None:
    """URLs (relative to the app's root) of bertviz's libraries, or None when one is missing."""
    if any(script(name) is None for name in SCRIPTS):
        return None
    return {name: f"{ROUTE}/{name}.js" for name in SCRIPTS}


def routes() -> list:
    """The Starlette route that serves the three scripts (and nothing else)."""
    from starlette.responses import PlainTextResponse, Response
    from starlette.routing import Route

    async def serve(request):
        name = request.path_params["name"]
        body = script(name) if name in SCRIPTS else None
        if body is None:
            return PlainTextResponse("Not found", status_code=404)
        return Response(body, media_type="text/javascript; charset=utf-8",
                        headers={"Cache-Control": "public, max-age=86400"})

    return [Route(f"/{ROUTE}/{{name}}.js", serve, methods=["GET", "HEAD"])]
