"""models/zoo/allocator.py: the allocator a training process is started with (LD_PRELOAD), and
what a process reports it has: on fake library folders, and on this machine's real tcmalloc."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from models.zoo import allocator as A

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture()
def fake_lib(tmp_path: Path) -> Path:
    folder = tmp_path / "lib"
    folder.mkdir()
    (folder / "libtcmalloc_minimal.so.4").write_bytes(b"\x7fELF")
    return folder


def test_resolve_takes_tcmalloc_when_there_glibc_when_asked_and_refuses_a_missing_one(tmp_path, fake_lib):
    assert A.resolve("auto", dirs=[fake_lib]) == fake_lib / "libtcmalloc_minimal.so.4"
    assert A.resolve("tcmalloc", dirs=[fake_lib]) == fake_lib / "libtcmalloc_minimal.so.4"
    assert A.resolve("glibc", dirs=[fake_lib]) is None
    assert A.resolve("auto", dirs=[tmp_path / "empty"]) is None  # not installed: glibc's, no error
    with pytest.raises(A.AllocatorError, match="libtcmalloc-minimal4"):
        A.resolve("tcmalloc", dirs=[tmp_path / "empty"])
    with pytest.raises(ValueError, match="auto, tcmalloc, glibc"):
        A.resolve("mimalloc")


def test_child_env_preloads_tcmalloc_first_and_keeps_other_preloads_and_variables(fake_lib):
    env = {"PATH": "/bin", "LD_PRELOAD": "/opt/old/libtcmalloc.so.4 /opt/libfoo.so"}
    out = A.child_env("tcmalloc", env, dirs=[fake_lib])
    assert out["LD_PRELOAD"].split() == [str(fake_lib / "libtcmalloc_minimal.so.4"), "/opt/libfoo.so"]
    assert out["PATH"] == "/bin" and int(out["TCMALLOC_LARGE_ALLOC_REPORT_THRESHOLD"]) >= 1 << 30
    assert env["LD_PRELOAD"] == "/opt/old/libtcmalloc.so.4 /opt/libfoo.so"  # the caller's dict untouched
    assert A.child_env("glibc", env, dirs=[fake_lib])["LD_PRELOAD"] == "/opt/libfoo.so"
    assert "LD_PRELOAD" not in A.child_env("glibc", {"LD_PRELOAD": "/x/libtcmalloc_minimal.so.4"})


def test_current_allocator_reads_the_mapped_libraries(tmp_path):
    maps = tmp_path / "maps"
    maps.write_text("7f00-7f10 r-xp 0 08:01 1 /usr/lib/x86_64-linux-gnu/libc.so.6\n")
    assert A.current_allocator(maps) == "glibc"
    maps.write_text(maps.read_text() + "7f20-7f30 r-xp 0 08:01 2 /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4\n")
    assert A.current_allocator(maps) == "tcmalloc"
    assert A.current_allocator(tmp_path / "no-proc") == "system"


@pytest.mark.skipif(A.find_tcmalloc() is None, reason="tcmalloc not installed (make tcmalloc)")
def test_a_child_started_with_child_env_runs_with_the_allocator_asked_for():
    """The real library, preloaded: the child's own /proc/self/maps shows it, and torch works on it."""
    code = ("import torch; from models.zoo.allocator import current_allocator; "
            "x = torch.ones(3000, 3000) @ torch.ones(3000, 8); print(current_allocator(), float(x[0, 0]))")
    for allocator, expected in (("tcmalloc", "tcmalloc"), ("glibc", "glibc")):
        done = subprocess.run([sys.executable, "-c", code], cwd=str(REPO), env=A.child_env(allocator),
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == [expected, "3000.0"]
