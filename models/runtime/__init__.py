"""Turning a key into a loaded model: loading and caching, device, kernels, micro-batching, tokenizing."""
