"""Decoders beside the encoders: the next piece after a text, and the measured comparison."""
