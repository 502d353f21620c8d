"""A BERT body's forward replayed as a CUDA graph, one graph per padded shape.

On a GPU a small encoder's forward for a short text is bound by launching its kernels, not
by their arithmetic: on an NVIDIA H200 (2026-12-04, one probe run, minilm-mlm's shape in
float16, a 12-token text), transformers' forward of the body took 3.43 ms, about the whole
of ``pipeline("fill-mask")``'s 3.87 ms, while the same body captured once with
``torch.cuda.graph`` and replayed took 0.33 ms. A CUDA graph records the kernels of one
forward with its shapes and buffers fixed; a replay launches all of them at once. In the GPU
check's ``bench.fill_mask`` (two runs on H200s, 2026-12-04, stand-in weights of the real
shapes) a whole fill-mask call then took 0.35-0.39x the pipeline's time, 0.82-0.83x with the
graphs off (BENCHMARKS.md, "GPU").

So fill-mask's texts are padded on the right (an attention mask keeps the padding out of
every real token, as in a padded batch) to a shape of a small fixed set, ``BATCHES`` texts
by ``lengths_for(body)`` tokens, and each shape's graph is captured on its first use: the inputs are
copied into that graph's static buffers, the graph replays, and the masked positions'
states are copied out before the lock is let go (the next replay overwrites the output).

transformers builds the attention mask from the mask tensor without reading its values
while a stream is capturing (``is_tracing``), so the captured graph applies whatever mask
the buffer holds at replay. Capture runs on a side stream in ``thread_local`` error mode:
other threads' work on the GPU is not disturbed. A capture that fails (an attention kernel
that copies from the CPU, say) turns graphs off for that model: transformers' forward runs.

Without CUDA (the tests on the CPU) the same buffers and shapes run
through the body eagerly, so the padding and gathering are tested everywhere; the capture
itself only on a GPU (``tests/unit/runtime/test_cuda_graphs.py``, in the GPU check). Each
graph keeps a memory pool of its own (its shape's activations; not measured here), outside
the model cache's budget; ``MAX_GRAPHS`` bounds them per model.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

import torch

BATCHES = (1, 2, 4, 8)  # texts a forward (fill-mask's micro-batcher takes at most 8)
SHORTEST = 16  # lengths: 16, 32, 64, ... up to the model's positions
MAX_GRAPHS = 12  # per model; a shape beyond them runs transformers' forward
WARMUP_RUNS = 2  # forwards before a capture (the library's lazy set-up stays out of the graph)

_enabled = True
_lock = threading.Lock()  # guards _bodies
# body -> its GraphedBody. Kept beside the model, not on it: a CUDA graph cannot be copied or
# pickled, and the views and tests deep-copy models. Weak both ways: the graphs go with the model.
_bodies: "weakref.WeakKeyDictionary[torch.nn.Module, GraphedBody]" = weakref.WeakKeyDictionary()


def use_cuda_graphs(enabled: bool) -> bool:
    """Turn fill-mask's CUDA graphs on or off (default on); returns the previous setting. Off,
    transformers' forward runs (the GPU check's benchmark compares the two)."""
    global _enabled
    previous = _enabled
    _enabled = bool(enabled)
    return previous


def cuda_graphs_enabled() -> bool:
    return _enabled


def lengths_for(body: torch.nn.Module) -> tuple[int, ...]:
    """The padded lengths for ``body``: powers of two from ``SHORTEST`` up to its positions."""
    limit = int(getattr(body.config, "max_position_embeddings", 512))
    out, n = [], SHORTEST
    while n < limit:
        out.append(n)
        n *= 2
    return (*out, limit)


def bucket(n: int, sizes: tuple[int, ...]) -> int | None:
    """The smallest size that holds ``n``, or None past the largest."""
    return next((size for size in sizes if size >= n), None)


@dataclass
class _Shape:
    inputs: dict  # name -> (B, T) static buffer on the device
    output: torch.Tensor | None = None  # (B, T, d) the replay's last hidden states
    graph: object = None  # torch.cuda.CUDAGraph, or None where the body runs eagerly


class GraphedBody:
    """Replays ``body`` (a transformers encoder) as one CUDA graph per padded shape."""

    def __init__(self, body: torch.nn.Module):
        self._body = weakref.ref(body)
        self.device = next(body.parameters()).device
        self.capture = self.device.type == "cuda"  # elsewhere the same buffers run eagerly
        self.lengths = lengths_for(body)
        self.shapes: dict[tuple[int, int], _Shape] = {}
        self.failed: str | None = None  # why capture failed, once it has
        self.served = 0  # calls answered (tests, and the bench's check of the path)
        self._lock = threading.Lock()  # one replay at a time: the buffers are shared

    def states_at(self, inputs: dict, rows: torch.Tensor, cols: torch.Tensor, pad_id: int) -> torch.Tensor | None:
        """(P, d) last hidden states at (rows[i], cols[i]) of the (B, T) ``inputs`` (CPU tensors:
        input_ids, attention_mask, maybe token_type_ids); None where no graph serves the
        shape (too many texts or tokens, the graphs' limit reached, or capture failed)."""
        b, t = inputs["input_ids"].shape
        key = (bucket(b, BATCHES), bucket(t, self.lengths))
        if None in key or self.failed:
            return None
        with self._lock:
            shape = self.shapes.get(key)
            if shape is None:
                if len(self.shapes) >= MAX_GRAPHS:
                    return None
                shape = self._make(key, inputs.keys(), pad_id)
                if shape is None:
                    return None
            self._fill(shape, inputs, pad_id)
            if shape.graph is not None:
                shape.graph.replay()
                hidden = shape.output
            else:
                hidden = self._run(shape.inputs)
            self.served += 1
            # advanced indexing copies: queued before any later replay on this stream
            return hidden[rows.to(self.device), cols.to(self.device)]

    def _run(self, inputs: dict) -> torch.Tensor:
        with torch.inference_mode():
            return self._body()(**inputs).last_hidden_state

    @staticmethod
    def _fill(shape: _Shape, inputs: dict, pad_id: int) -> None:
        for name, buffer in shape.inputs.items():
            source = inputs.get(name)
            buffer.fill_(pad_id if name == "input_ids" else 0)
            if source is not None:
                buffer[: source.shape[0], : source.shape[1]].copy_(source)
        # a padding row (more rows than texts) reads one token: no row is all masked
        shape.inputs["attention_mask"][:, 0] = 1

    def _make(self, key: tuple[int, int], names, pad_id: int) -> _Shape | None:
        names = dict.fromkeys(("input_ids", "attention_mask", *names))
        shape = _Shape({name: torch.zeros(key, dtype=torch.long, device=self.device) for name in names})
        if not self.capture:
            self.shapes[key] = shape
            return shape
        # Captured with padding in the mask, so no branch can be taken for "no padding".
        shape.inputs["input_ids"].fill_(pad_id)
        shape.inputs["attention_mask"][:, : max(1, key[1] - 1)] = 1
        try:
            stream = torch.cuda.Stream(self.device)
            stream.wait_stream(torch.cuda.current_stream(self.device))
            with torch.cuda.stream(stream):
                for _ in range(WARMUP_RUNS):
                    self._run(shape.inputs)
            torch.cuda.current_stream(self.device).wait_stream(stream)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, stream=stream, capture_error_mode="thread_local"):
                shape.output = self._run(shape.inputs)
            torch.cuda.current_stream(self.device).wait_stream(stream)
        except RuntimeError as exc:  # the body cannot be captured: transformers' forward from now on
            self.failed = f"{type(exc).__name__}: {exc}"[:300]
            return None
        shape.graph = graph
        self.shapes[key] = shape
        return shape


def graphed_body(body: torch.nn.Module) -> GraphedBody:
    """The one ``GraphedBody`` of ``body``, made on first use (it goes when the model cache
    lets the model go)."""
    with _lock:
        graphed = _bodies.get(body)
        if graphed is None:
            graphed = _bodies[body] = GraphedBody(body)
        return graphed
