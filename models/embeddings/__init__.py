"""Sentence vectors: pooling, similarity, separation, 2-D projection, built-in sets, retrieval."""
