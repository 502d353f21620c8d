"""Turning a key into a loaded model: loading and caching, device, kernels, micro-batching, tokenizing.

The runtime's switches live here, not in ``models``' public API of computations: each turns a
fast path off or on for the whole process (the benchmarks measure a path's share with them; the
server turns CUDA graphs off where the GPU is lent one call at a time). A computation's result
is the same with a path on or off, to float rounding (the runtime's tests compare both)."""

from .cuda_graphs import use_cuda_graphs
from .onednn import onednn_enabled, use_onednn

__all__ = ["onednn_enabled", "use_cuda_graphs", "use_onednn"]
