"""Masked-language-model guesses: fill-mask, the causal mask, left-to-right generation."""
