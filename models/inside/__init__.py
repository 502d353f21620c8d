"""Inside the encoder: one forward pass step by step (``steps``), and where the MLM loss's
gradient goes (``gradients``)."""

from .gradients import MLMGradients, mlm_gradients
from .steps import StepCheck, ForwardSteps, Step, forward_steps

__all__ = ["StepCheck", "ForwardSteps", "MLMGradients", "Step", "forward_steps", "mlm_gradients"]
