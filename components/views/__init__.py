"""Views shared by several tabs: the causal mask and generation, "show the arithmetic", token + position + segment embeddings."""
