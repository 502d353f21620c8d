"""Files the app hands to Gradio (downloads, images): one fixed folder per kind, named by content.

Gradio serves files from the system's temp folder; it copies a returned file into its own
cache, once per content (it hashes the file). A view that returns the same bytes again
returns the same path, and each folder keeps only its newest files, so no folder grows past
its bound, whatever the traffic. Several app processes on one machine (replicas) share the
folders: a file is written under a private name and renamed, so no reader sees half a file,
and a file handed out is made the newest first, so another process's pruning keeps it.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from pathlib import Path

TEMP = Path(tempfile.gettempdir())


def kept_file(data: bytes, folder: Path, prefix: str, suffix: str, keep: int) -> str:
    """``data`` as ``folder/{prefix}-{hash}{suffix}`` (written once), the ``keep`` newest
    files of that name pattern kept; the path, as Gradio takes it for a file output."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{prefix}-{hashlib.sha256(data).hexdigest()[:20]}{suffix}"
    if path.exists():
        os.utime(path)  # now the newest: another writer's pruning keeps it
        return str(path)  # nothing added: nothing to prune (a repeat costs a hash and a stat)
    part = folder / f".{path.name}.{os.getpid()}.{threading.get_ident()}.part"
    part.write_bytes(data)  # written under a private name, then renamed: no reader sees half a file
    os.replace(part, path)
    files = sorted(folder.glob(f"{prefix}-*{suffix}"), key=_mtime, reverse=True)
    for old in files[keep:]:
        if old != path:
            old.unlink(missing_ok=True)
    return str(path)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:  # deleted by another request meanwhile
        return 0.0
