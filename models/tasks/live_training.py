"""What the live training runs of the Fine-tuning tab share: one run at a time in this process,
stoppable, bounded in steps and seconds, always on a copy of a small encoder.

Used by the sentence encoder, the pair and span heads and the distillation run.
"""

from __future__ import annotations

import copy
import itertools
import secrets
import threading
import time
from contextlib import contextmanager

import torch

from ..errors import CapabilityError, InputError
from ..registry.spec import ModelSpec
from ..runtime.loading import BUILD_LOCK, load_model
from ..runtime.memory import VISITOR, KeptRuns, own_bytes
from ..runtime.run_store import body_from_state, body_state
from ..validation import as_real

MAX_LIVE_PARAMETERS = 40_000_000  # all-MiniLM-L6-v2 is 22.7 M; BERT-base (110 M) is refused
MAX_LIVE_SECONDS = 300  # no live run lasts longer, whatever its steps

BACKGROUND_WAIT_S = 120  # how long a request waits for a background run to end (they take seconds)

_RUN_LOCK = threading.Lock()
_STOP = threading.Event()
_running: list[str] = []  # what the current run is, for the busy message
_holder_background = [False]  # is the current run a background one (``background_runs``)?
_holder_stop = [""]  # how the current run is stopped when not by ``stop_live_training`` (else "")
_holder_owner: list[str | None] = [None]  # who started the current run (``run_owner``), None: anyone may stop it
_OWNER = VISITOR  # the visitor a request runs for (``run_owner``): a live run's, a kept run's owner
_thread = threading.local()  # .background: runs started on this thread give way


@contextmanager
def background_runs():
    """Runs started inside this block, on this thread, give way to requests.

    For the app's warm-up, which computes the Lessons' default views (short runs) right after
    start-up: a request that finds such a run holding the slot waits for it to end (at most
    ``BACKGROUND_WAIT_S``) instead of being told the process is busy, and a stop request leaves
    it alone (its result is kept as a default view; a stopped one would be kept too).
    """
    _thread.background = True
    try:
        yield
    finally:
        _thread.background = False


@contextmanager
def run_owner(owner: str | None):
    """Runs started inside this block belong to ``owner`` (the app passes its visitor's session):
    ``stop_live_training(owner=...)`` from anyone else leaves them going. Outside it (a notebook,
    the Lessons' runs) a run has no owner and any stop request stops it."""
    token = _OWNER.set(owner)
    try:
        yield
    finally:
        _OWNER.reset(token)


@contextmanager
def exclusive_run(what: str, stopped_by: str = ""):
    """Hold the process's one live-training slot; an InputError says what runs when it is taken
    (a background run is waited for instead). ``stopped_by``: for a run that ``stop_live_training``
    does not stop, how it is stopped (the tiny BERT: its own tab's Stop, by the visitor who started it)."""
    if not _RUN_LOCK.acquire(blocking=False):
        if not (_holder_background[0] and _RUN_LOCK.acquire(timeout=BACKGROUND_WAIT_S)):
            running = _running[0] if _running else "another training run"
            how = ("Wait for it to end" if _holder_stop[0] or _holder_owner[0] is not None
                   else "Wait for it to end or stop it (stop_live_training)")
            raise InputError(f"Busy: {running} is running in this process (one training run at a time). "
                             f"{how}, then try again.")
    _STOP.clear()
    _running[:] = [what]
    _holder_background[0] = getattr(_thread, "background", False)
    _holder_stop[0] = stopped_by
    _holder_owner[0] = _OWNER.get()
    try:
        yield
    finally:
        _running.clear()
        _holder_background[0] = False
        _holder_stop[0] = ""
        _holder_owner[0] = None
        _STOP.clear()
        _RUN_LOCK.release()


def stop_live_training(owner: str | None = None) -> str:
    """Ask the running live training (sentence encoder, pair/span head, distillation) to stop
    after its current step; it returns what it has so far.

    owner: who asks (the app passes its visitor's session). A run started inside ``run_owner``
    by someone else is not stopped; None (a notebook) stops any run.
    """
    if not _RUN_LOCK.locked():
        return "No live training run is running."
    if _holder_background[0]:
        return (f"Nothing to stop: {_running[0] if _running else 'the run'} is the app computing a lesson's "
                "default view; it ends in seconds, and a training run asked for meanwhile waits for it.")
    if _holder_stop[0]:
        return f"Nothing stopped: {_running[0] if _running else 'the run'} is {_holder_stop[0]}."
    if owner is not None and _holder_owner[0] is not None and owner != _holder_owner[0]:
        return (f"Not stopped: {_running[0] if _running else 'the run'} was started by another visitor, and "
                "only they can stop it; it ends by itself within its steps and seconds.")
    _STOP.set()
    return f"Stop requested: {_running[0] if _running else 'the run'} ends after its current step."


def live_training_busy() -> bool:
    """Is a live training run holding this process's slot now?"""
    return _RUN_LOCK.locked()


class Budget:
    """A run's bounds: stop at `steps`, after `seconds`, or when someone asks it to stop."""

    def __init__(self, seconds: float):
        self.seconds, self.started, self.why = seconds, time.perf_counter(), ""

    def over(self) -> bool:
        if _STOP.is_set():
            self.why = "stopped on request"
        elif time.perf_counter() - self.started > self.seconds:
            self.why = f"stopped at its time limit ({self.seconds:g} s)"
        return bool(self.why)

    def elapsed(self) -> float:
        return time.perf_counter() - self.started


def check_seconds(max_seconds) -> float:
    value = as_real(max_seconds)
    if not 1 <= value <= MAX_LIVE_SECONDS:
        raise InputError(f"max_seconds must be between 1 and {MAX_LIVE_SECONDS}; got {max_seconds!r}.")
    return value


def check_rate(learning_rate) -> float:
    lr = as_real(learning_rate)
    if not 0 < lr < 1:
        raise InputError(f"learning_rate must be between 0 and 1; got {learning_rate!r}.")
    return lr


def trainable_copy(loaded, seed: int):
    """A float32 copy of the cached encoder in train mode (the shared model is never touched)."""
    body_params = sum(p.numel() for p in loaded.model.parameters())
    if body_params > MAX_LIVE_PARAMETERS:
        raise CapabilityError(
            f"Training a copy of {loaded.spec.key} ({body_params / 1e6:.0f} M parameters) is too big for a "
            f"live run here (limit {MAX_LIVE_PARAMETERS / 1e6:.0f} M): choose a smaller model "
            "(minilm-l6, minilm-mlm, the mini zoo)."
        )
    torch.manual_seed(seed)
    body = copy.deepcopy(loaded.model).float()
    body.train()
    return body


def linear_head(body, n_out: int, device) -> torch.nn.Linear:
    """A new linear head on ``body``'s hidden size, initialised from the global RNG as seeded by the
    caller. Built under ``BUILD_LOCK``: another request's model load meanwhile sets torch's default
    dtype process-wide (float16 on a GPU)."""
    with BUILD_LOCK:
        return torch.nn.Linear(int(body.config.hidden_size), n_out).to(device)


def export_head_run(model, freeze: bool, fields: tuple[str, ...] = ()) -> dict:
    """A kept head run's trained part (``models/runtime/run_store.py``): the head and how it reads
    (``fields`` before pooling, layer, labels); a fine-tuned copy's body as tensors too (a
    probe's body is the shared cached encoder, loaded again on restore)."""
    parts = {name: getattr(model, name) for name in ("head", *fields, "pooling", "layer", "labels")}
    if not freeze:
        parts["body"] = body_state(model.body)
    return parts


def adopt_head_model(build, spec: ModelSpec, payload: dict, fields: tuple[str, ...] = ()):
    """``build(body, head, *fields, pooling, layer, tokenizer, labels)`` from ``export_head_run``'s parts."""
    loaded = load_model(spec, head="base")
    if "body" in payload:  # a fine-tuned copy
        body = body_from_state(spec, payload["body"])
        head = payload["head"].to(body.device)
    else:  # a probe on the shared encoder
        body, head = loaded.model, payload["head"].to(loaded.device, loaded.dtype)
    return build(body, head, *(payload[f] for f in fields), payload["pooling"], payload["layer"], loaded.tokenizer,
                 payload["labels"])


def parameter_count(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def train_how(what: str, button: str, function: str) -> str:
    """How to train a missing head or encoder, for the page's visitor and the API's caller
    alike: ``train_how("one first", "Train the head", "train_classifier")``."""
    return f"train {what}: the “{button}” button, or {function} in the API"


_STORES: list["HeadStore"] = []  # every store, for ``live_heads``


class HeadStore:
    """Trained heads kept in this process by id, within the server's memory budget (``KeptRuns``),
    with their model key."""

    def __init__(self, prefix: str, trainer: str, button: str):
        """``trainer``: the API function that trains one; ``button``: the page's button."""
        self.prefix, self.trainer, self.button = prefix, trainer, button
        self.runs = KeptRuns(f"{prefix} heads", f"trained {prefix} head", train_how("one first", button, trainer))
        self._ids = itertools.count(1)
        _STORES.append(self)

    def ids(self) -> tuple[str, ...]:
        return tuple(k for k, _ in self.runs.items())

    def keep(self, model, model_key: str, *name: str) -> str:
        # a random tail: the number starts again at a restart (see ``classifier._keep``)
        head_id = f"{self.prefix}:{'/'.join((model_key, *name))}/{next(self._ids)}-{secrets.token_hex(2)}"
        return self.runs.keep(head_id, (model, model_key), own_bytes(model))

    def get(self, head_id) -> tuple:
        """(model, model key), or an InputError naming the button and function that train one."""
        return self.runs.get(head_id)


def live_heads() -> tuple[str, ...]:
    """The ids of the pair and span heads trained in this process and still kept (older ones
    are pushed out by newer ones: a caller holding an id can check it is still usable)."""
    return tuple(head_id for store in _STORES for head_id in store.ids())
