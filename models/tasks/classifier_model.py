"""The classifier as one differentiable module: encoder + pooling + linear head.

Both training paths (a probe on frozen features, fine-tuning a copy) return it, and the
attribution of a class differentiates through it."""

from __future__ import annotations

import torch

from ..embeddings.pooling import pool_hidden


class ClassifierModel(torch.nn.Module):
    """Encoder + pooling + linear head. forward(...) -> logits (B, C), or (B, T, C) per token."""

    def __init__(self, body, head: torch.nn.Linear, kind: str, pooling: str, layer: int,
                 tokenizer, labels: tuple[str, ...]):
        super().__init__()
        self.body, self.head = body, head
        self.kind, self.pooling, self.layer = kind, pooling, layer
        self.tokenizer, self.labels = tokenizer, labels
        self.n_layers = int(body.config.num_hidden_layers)

    def get_input_embeddings(self):
        """The body's word embeddings (what attribution methods differentiate against)."""
        return self.body.get_input_embeddings()

    def forward(self, input_ids=None, attention_mask=None, inputs_embeds=None):
        shape = (input_ids if input_ids is not None else inputs_embeds).shape[:2]
        if attention_mask is None:
            attention_mask = torch.ones(shape, dtype=torch.long, device=self.head.weight.device)
        out = self.body(input_ids=input_ids, inputs_embeds=inputs_embeds, attention_mask=attention_mask,
                        output_hidden_states=self.layer != self.n_layers)
        hidden = out.last_hidden_state if self.layer == self.n_layers else out.hidden_states[self.layer]
        hidden = hidden.to(self.head.weight.dtype)  # (B, T, d)
        if self.kind == "token":
            return self.head(hidden)  # (B, T, C)
        # pooling gives float32; a probe's head on the shared model is in its dtype (float16 on a GPU)
        return self.head(pool_hidden(hidden, attention_mask, self.pooling).to(self.head.weight.dtype))  # (B, C)
