"""bertviz's JavaScript: the committed tarballs are exactly what the lock pins, and the app
serves the one file bertviz needs from each, under a fixed route, nothing else."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import tarfile

import pytest

from components.shell import vendor
from helpers import REPO

LOCK = json.loads((REPO / "assets" / "vendor" / "package-lock.json").read_text())["packages"]
PACKAGE = json.loads((REPO / "assets" / "vendor" / "package.json").read_text())


@pytest.mark.parametrize("package", sorted(PACKAGE["dependencies"]))
def test_each_committed_tarball_matches_the_locks_integrity(package):
    entry = LOCK[f"node_modules/{package}"]
    assert entry["version"] == PACKAGE["dependencies"][package]  # package.json and lock agree
    path = REPO / "assets" / "vendor" / f"{package}-{entry['version']}.tgz"
    algorithm, digest = entry["integrity"].split("-", 1)
    assert algorithm == "sha512"
    # Computed here with hashlib, not with the app's helper: the same check npm ci makes.
    assert hashlib.sha512(path.read_bytes()).digest() == base64.b64decode(digest)


@pytest.mark.parametrize("package", sorted(PACKAGE["dependencies"]))
def test_each_package_has_its_licence_beside_it(package):
    version = LOCK[f"node_modules/{package}"]["version"]
    licence = REPO / "assets" / "vendor" / "licenses" / f"{package}-{version}-LICENSE.txt"
    text = licence.read_text()
    wording = {"MIT": "Permission is hereby granted, free of charge",
               "BSD-3-Clause": "Redistribution and use in source and binary forms"}
    assert wording[LOCK[f"node_modules/{package}"]["license"]] in text
    with tarfile.open(REPO / "assets" / "vendor" / f"{package}-{version}.tgz") as archive:
        shipped = [m for m in archive.getnames() if m in ("package/LICENSE", "package/LICENSE.txt")]
        if shipped:  # d3 and jQuery ship one: the copy beside the tarball is that file
            assert archive.extractfile(shipped[0]).read().decode() == text
        else:  # requirejs ships none: its header says MIT
            head = archive.extractfile("package/require.js").read(400).decode()
            assert "Released under MIT license" in head


def test_served_scripts_are_the_tarball_members():
    for name, (package, member) in vendor.SCRIPTS.items():
        with tarfile.open(vendor.tarball(package)) as archive:
            assert vendor.script(name) == archive.extractfile(member).read()
    assert vendor.library_urls() == {name: f"vendor/{name}.js" for name in vendor.SCRIPTS}


def test_an_altered_tarball_is_not_served(monkeypatch, tmp_path):
    (tmp_path / "package-lock.json").write_bytes((vendor.VENDOR_DIR / "package-lock.json").read_bytes())
    for package, _ in vendor.SCRIPTS.values():
        data = vendor.tarball(package).read_bytes()
        (tmp_path / vendor.tarball(package).name).write_bytes(data)
    # Re-pack d3 with one byte of its script changed: a valid tarball, the wrong hash.
    with tarfile.open(vendor.tarball("d3")) as archive:
        member = archive.getmember("package/dist/d3.min.js")
        body = bytearray(archive.extractfile(member).read())
    body[0] ^= 1
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as out:
        member.size = len(body)
        out.addfile(member, io.BytesIO(bytes(body)))
    (tmp_path / vendor.tarball("d3").name).write_bytes(buffer.getvalue())
    monkeypatch.setattr(vendor, "VENDOR_DIR", tmp_path)
    for cached in (vendor._lock, vendor.script):
        cached.cache_clear()
    try:
        assert vendor.script("d3") is None and vendor.script("jquery") is not None
        assert vendor.library_urls() is None
    finally:
        monkeypatch.undo()
        for cached in (vendor._lock, vendor.script):
            cached.cache_clear()


def test_the_route_serves_the_three_scripts_and_nothing_else():
    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    client = TestClient(Starlette(routes=vendor.routes()))
    for name in vendor.SCRIPTS:
        resp = client.get(f"/vendor/{name}.js")
        assert resp.status_code == 200 and resp.content == vendor.script(name)
        assert resp.headers["content-type"].startswith("text/javascript")
    for path in ("/vendor/package-lock.json", "/vendor/d3-5.7.0.tgz", "/vendor/README.js",
                 "/vendor/..%2Fpackage-lock.json", "/vendor/../app.py"):
        assert client.get(path).status_code == 404
