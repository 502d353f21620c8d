"""Forward hooks that record what the model's own modules receive and return.

``Recorder`` registers a hook on each module it is asked to watch and keeps, per module,
every call's positional inputs, keyword inputs and output (a shared layer, ALBERT's, is
called once per layer: call ``i`` is layer ``i``). Nothing is recomputed here: the tensors
are the ones the model passed between its modules.

The models are shared by the app's worker threads: a hook records only calls made by the
thread that registered it, and the hooks are removed when the ``with`` block ends.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import torch


@dataclass
class Call:
    """One call of a module: what went in, what came out (detached, on the model's device)."""

    args: tuple
    kwargs: dict
    output: object


def _detach(value):
    if isinstance(value, torch.Tensor):
        return value.detach()
    if isinstance(value, tuple):
        return tuple(_detach(v) for v in value)
    return value


@dataclass
class Recorder:
    """Records the calls of the watched modules during one forward pass (a context manager)."""

    calls: dict = field(default_factory=dict)  # id(module) -> [Call, ...]
    _handles: list = field(default_factory=list)
    _watched: dict = field(default_factory=dict)  # id(module) -> module

    def watch(self, *modules) -> "Recorder":
        for module in modules:
            if module is not None and id(module) not in self._watched:
                self._watched[id(module)] = module
        return self

    def __enter__(self) -> "Recorder":
        thread = threading.get_ident()
        for key, module in self._watched.items():
            self.calls[key] = []

            def hook(mod, args, kwargs, output, key=key):
                if threading.get_ident() == thread:
                    self.calls[key].append(Call(_detach(args), {k: _detach(v) for k, v in kwargs.items()},
                                                _detach(output)))

            self._handles.append(module.register_forward_hook(hook, with_kwargs=True))
        return self

    def __exit__(self, *exc) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def call(self, module, index: int = 0) -> Call:
        """The ``index``-th call of ``module`` in this pass."""
        calls = self.calls.get(id(module), [])
        if index >= len(calls):
            raise RuntimeError(f"{type(module).__name__} was called {len(calls)} time(s) in this pass, "
                               f"not {index + 1}: the hooks do not match this model's code.")
        return calls[index]

    def output(self, module, index: int = 0, item: int | None = None) -> torch.Tensor:
        out = self.call(module, index).output
        return out[item] if item is not None else out

    def input(self, module, index: int = 0, position: int = 0) -> torch.Tensor:
        return self.call(module, index).args[position]

    def times_called(self, module) -> int:
        return len(self.calls.get(id(module), []))
