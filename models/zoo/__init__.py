"""The mini zoo's training: tokenizers, families, data, training loop, scores, cards."""
