"""What the layers look at: attention weights, head statistics, rollout; input embeddings."""
