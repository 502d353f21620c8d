"""Several models side by side: architecture facts, one input through many models, benchmarks."""
