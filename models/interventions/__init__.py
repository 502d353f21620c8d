"""Which parts matter: knock out heads, patch activations, read every layer through the
MLM head, for every family, through one mechanism (``hooks``: edits at named points of the
model's own modules)."""

from .ablation import AblationResult, HeadImportance, MaskAblation, ablate_heads, head_importance
from .common import Guess, Target
from .lens import LensLayer, LogitLens, logit_lens
from .patching import MAX_PATCH_POSITIONS, PatchResult, patch_activations

__all__ = ["AblationResult", "Guess", "HeadImportance", "LensLayer", "LogitLens", "MAX_PATCH_POSITIONS",
           "MaskAblation", "PatchResult", "Target", "ablate_heads", "head_importance", "logit_lens",
           "patch_activations"]
