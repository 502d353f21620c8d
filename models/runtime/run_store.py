"""Training runs kept on disk: a restart restores a short run instead of training it again.

The Lessons' live-training steps train short seeded runs (a classifier probe, a sentence encoder,
a pair probe, a span head, two distillation students) whose result depends only on their
arguments, the code, the data and the weights. Trained again at every start, they were most of
what a restarted app computed before its first visitor's views were ready (about 28 of 32 s on
two cores, one run measured 2026-11-26). ``kept_run(trainer, model_key,
*args, **kwargs)`` runs ``trainer`` once and keeps its result (and the trained copy it holds) in
``.cache/runs-kept`` (``ENCODER_LAB_RUNS_DIR``); a later call with the same fingerprint, in this
process or after a restart, restores it: the trained copy is registered again in this process
(a new head id or ``sbert:`` key) and its note says that it was kept, from when.

The fingerprint: the trainer's name, its arguments, the digest of the core's source files
(``models/**.py``), of ``data/`` (names, sizes, modification times), of the model's weights
(every tensor of the loaded model, MLM head included where it has one), the torch and
transformers versions and the device type. Anything changed, the run trains again.

A kind of result is kept only if its module registers how (``register_kind``): what to save
beside the result (``export``: the trained copy, owned by the run, never a shared model) and
how to put it back (``adopt``: returns the result with its new id). A file that cannot be read
back (another torch, a class changed) is logged and the run trains again. ``ENCODER_LAB_KEEP_RUNS=0``
turns keeping off; the newest ``MAX_KEPT`` files stay, older ones are removed. The files are
pickles written by this process for itself: the folder must not be writable by others. A run cut
short (its ``stopped`` says why) is not kept: it is not the run its settings describe.
"""

from __future__ import annotations

import copy
import datetime as _dt
import hashlib
import logging
import os
from dataclasses import replace
from pathlib import Path
from typing import Callable

import torch
import transformers

from ..registry import catalogue
from ..registry.spec import ModelSpec
from .loading import get_device, load_model

log = logging.getLogger("encoder_lab")

_KINDS: dict[type, tuple[Callable, Callable]] = {}
_CODE_DIGEST: str | None = None
_WEIGHTS_DIGESTS: dict[str, str] = {}
MAX_KEPT = 24  # files kept (the newest): a change of code or settings leaves the older ones unused
RESTORED: list[str] = []  # the trainers' names of runs restored in this process (for tests, logs)


def runs_dir() -> Path:
    return Path(os.environ.get("ENCODER_LAB_RUNS_DIR", catalogue.REPO_ROOT / ".cache" / "runs-kept"))


def keeping() -> bool:
    return os.environ.get("ENCODER_LAB_KEEP_RUNS", "1") != "0"


def register_kind(result_type: type, export: Callable, adopt: Callable) -> None:
    """``export(result) -> payload`` (picklable; the run's own trained copy) and
    ``adopt(result, payload, spec) -> result`` (registered again in this process; ``spec``: the
    encoder's, resolved once by ``kept_run``)."""
    _KINDS[result_type] = (export, adopt)


def body_state(body: torch.nn.Module) -> dict[str, torch.Tensor]:
    """A trained copy of an encoder as plain tensors (a module may carry hooks that do not pickle)."""
    return {name: tensor.detach().cpu().clone() for name, tensor in body.state_dict().items()}


def body_from_state(spec: ModelSpec, state: dict[str, torch.Tensor]) -> torch.nn.Module:
    """The copy back: the cached encoder's structure (as ``trainable_copy`` made it) with ``state``."""
    loaded = load_model(spec, head="base")
    body = copy.deepcopy(loaded.model).float()
    body.load_state_dict(state)
    return body.to(loaded.device).eval()


def _tree_digest(root: Path, pattern: str, contents: bool) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob(pattern)):
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        digest.update(str(path.relative_to(root)).encode())
        if contents:
            digest.update(path.read_bytes())
        else:
            stat = path.stat()
            digest.update(f"{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()


def _code_digest() -> str:
    global _CODE_DIGEST
    if _CODE_DIGEST is None:
        core = Path(__file__).resolve().parents[1]
        _CODE_DIGEST = _tree_digest(core, "*.py", True) + _tree_digest(catalogue.REPO_ROOT / "data", "*", False)
    return _CODE_DIGEST


def _weights_digest(spec: ModelSpec) -> str:
    model_key = spec.key
    if model_key not in _WEIGHTS_DIGESTS:
        loaded = load_model(spec, head="mlm" if spec.has_mlm_head else "base")
        digest = hashlib.sha256()
        for name, tensor in sorted(loaded.model.state_dict().items()):
            digest.update(name.encode())
            digest.update(tensor.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
        _WEIGHTS_DIGESTS[model_key] = digest.hexdigest()
    return _WEIGHTS_DIGESTS[model_key]


def fingerprint(trainer: Callable, spec: ModelSpec, args: tuple, kwargs: dict) -> str:
    parts = (trainer.__module__, trainer.__qualname__, spec.key, repr(args), repr(sorted(kwargs.items())),
             _code_digest(), _weights_digest(spec), torch.__version__, transformers.__version__,
             get_device().type)
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:32]


def _restore(path: Path, name: str, spec: ModelSpec):
    try:
        saved = torch.load(path, map_location=get_device(), weights_only=False)
        result = _KINDS[type(saved["result"])][1](saved["result"], saved["payload"], spec)
    except Exception as exc:  # noqa: BLE001  (unreadable here: train again)
        log.info("kept run %s not restored (%s): training it again", path.name, exc)
        return None
    when = _dt.datetime.fromtimestamp(saved["saved"], _dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    RESTORED.append(name)
    log.info("kept run restored: %s (%s, saved %s)", name, path.name, when)
    return replace(result, note=f"{result.note} Kept on disk from a run at {when} with the same code, data, "
                                f"weights and settings, and restored here instead of training again.")


def _kept_path(trainer: Callable, spec: ModelSpec, args: tuple, kwargs: dict) -> Path:
    return runs_dir() / f"{trainer.__qualname__}-{fingerprint(trainer, spec, args, kwargs)}.pt"


def kept_result(trainer: Callable, spec: ModelSpec, *args, **kwargs):
    """What ``kept_run(trainer, spec.key, *args, **kwargs)`` would restore, or None when no such
    run is kept: nothing is computed (for a view that must not start a run of minutes)."""
    if not keeping():
        return None
    path = _kept_path(trainer, spec, args, kwargs)
    return _restore(path, trainer.__qualname__, spec) if path.exists() else None


def kept_run(trainer: Callable, model_key: str, *args, **kwargs):
    """``trainer(model_key, *args, **kwargs)``, or the same run kept from before (see above)."""
    name = trainer.__qualname__
    if not keeping():
        return trainer(model_key, *args, **kwargs)
    spec = catalogue.get_spec(model_key)
    path = _kept_path(trainer, spec, args, kwargs)
    if path.exists():
        restored = _restore(path, name, spec)
        if restored is not None:
            return restored
    result = trainer(model_key, *args, **kwargs)
    kind = _KINDS.get(type(result))
    if kind is None or getattr(result, "stopped", ""):  # not a kind kept, or cut short: not the same run
        return result
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.partial")
        torch.save({"result": result, "payload": kind[0](result), "saved": _dt.datetime.now().timestamp()},
                   partial)
        os.replace(partial, path)
        _prune(path.parent)
    except OSError as exc:  # a read-only disk: the run is still served
        log.info("kept run %s not written (%s)", path.name, exc)
    return result


def _prune(folder: Path, keep: int = MAX_KEPT) -> None:
    """The newest ``keep`` kept runs stay; older ones (other code, other settings) go."""
    def age(path: Path) -> float:
        try:
            return path.stat().st_mtime
        except OSError:  # removed meanwhile by another process
            return 0.0

    for old in sorted(folder.glob("*.pt"), key=age, reverse=True)[keep:]:
        old.unlink(missing_ok=True)
