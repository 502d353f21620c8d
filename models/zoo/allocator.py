"""The memory allocator a zoo training process runs with: gperftools' tcmalloc when installed.

A training step on the CPU makes and frees many large buffers (the (masked positions x 8,192)
logits and their float32 copies, the attention's scores, every activation of the backward),
of a slightly different size from one step to the next. glibc's allocator gives buffers of
that size fresh pages again and again (``mmap``, or a heap it trims back), and each first
touch of a page costs a fault: on the 2-core Xeon of 2026-12-03, filling a fresh 19 MB
buffer took 5-7 ms against 0.7 ms for one already touched. tcmalloc keeps freed memory in its
own caches and hands it back. PyTorch's CPU performance guide recommends it (or jemalloc) for
the same reason; jemalloc was measured too and gained less here.

An allocator is chosen when a process starts (``LD_PRELOAD``), so this module only builds the
environment of a child process (``child_env``: the families of ``python -m scripts.zoo search``,
``bench/zoo_throughput.py``'s runs) and says what the running process has
(``current_allocator``, kept in each training record). Nothing here changes this process.

    sudo apt-get install libtcmalloc-minimal4    # Debian's package (``make tcmalloc``)
"""

from __future__ import annotations

import os
from pathlib import Path

ALLOCATORS = ("auto", "tcmalloc", "glibc")
# Debian's library (package libtcmalloc-minimal4), then the full gperftools build
NAMES = ("libtcmalloc_minimal.so.4", "libtcmalloc.so.4")
DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib")


class AllocatorError(RuntimeError):
    """tcmalloc asked for by name and not installed on this machine."""


def find_tcmalloc(dirs=DIRS) -> Path | None:
    """The path of tcmalloc's shared library on this machine, or None."""
    for d in dirs:
        for name in NAMES:
            path = Path(d) / name
            if path.is_file():
                return path
    return None


def resolve(allocator: str, found: Path | None = None, *, dirs=DIRS) -> Path | None:
    """The library a child should preload for ``allocator`` (None: glibc's own malloc).
    ``auto``: tcmalloc when installed, else glibc; ``tcmalloc``: it, or AllocatorError."""
    if allocator not in ALLOCATORS:
        raise ValueError(f"unknown allocator {allocator!r}: one of {', '.join(ALLOCATORS)}")
    if allocator == "glibc":
        return None
    library = found or find_tcmalloc(dirs)
    if library is None and allocator == "tcmalloc":
        raise AllocatorError("tcmalloc is not installed here (Debian: apt-get install libtcmalloc-minimal4, "
                             "or `make tcmalloc`); run with --allocator glibc or auto")
    return library


def child_env(allocator: str, env: dict | None = None, *, dirs=DIRS) -> dict:
    """``env`` (default: this process's) for a child process that runs with ``allocator``:
    LD_PRELOAD gains tcmalloc's library, or loses any tcmalloc for glibc; everything else kept."""
    out = dict(os.environ if env is None else env)
    library = resolve(allocator, dirs=dirs)
    kept = [p for p in out.get("LD_PRELOAD", "").replace(":", " ").split() if "tcmalloc" not in Path(p).name]
    if library is not None:
        kept.insert(0, str(library))
        # gperftools reports every allocation over 1 GiB on stderr; the trainer's logs stay clean
        out.setdefault("TCMALLOC_LARGE_ALLOC_REPORT_THRESHOLD", str(1 << 40))
    if kept:
        out["LD_PRELOAD"] = " ".join(kept)
    else:
        out.pop("LD_PRELOAD", None)
    return out


def current_allocator(maps: Path = Path("/proc/self/maps")) -> str:
    """The allocator this process runs with, read from its mapped libraries: "tcmalloc",
    "jemalloc" or "glibc"; "system" where there is no /proc to read (macOS)."""
    try:
        text = maps.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "system"
    for name in ("tcmalloc", "jemalloc"):
        if f"lib{name}" in text:
            return name
    return "glibc"
