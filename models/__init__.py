"""Encoder Lab's core: a plain Python API over transformers, usable from a notebook.

    from models import list_models, tokenize, fill_mask
    fill_mask("splade-tiny", "The capital of France is [MASK].")

No Gradio and no plotting here: functions take plain arguments and return frozen
dataclasses of Python / NumPy values.
"""

from .attention import (
    HEAD_FILTERS,
    STAT_NAMES,
    AttentionResult,
    HeadStatistics,
    attention_head_stats,
    attention_rollout,
    rollout_of,
    extract_attention,
    filter_heads,
    head_statistics,
)
from .errors import (
    CapabilityError,
    EncoderLabError,
    InputError,
    ModelUnavailableError,
    UnknownModelError,
)
from .architecture import ArchitectureFacts, TrainingRecipe, architecture_table, training_recipes
from .benchmark import (
    DEFAULT_LENGTHS,
    BenchmarkPoint,
    BenchmarkResult,
    benchmark_forward,
    benchmark_models,
    limits_for,
)
from .compare import (
    CompareFillMaskResult,
    CompareTokensResult,
    MaskAgreement,
    ModelPieces,
    SkippedModel,
    compare_fill_mask,
    compare_tokens,
    continues_word,
)
from .embeddings import (
    MAX_SENTENCES,
    POOLINGS,
    SimilarityResult,
    WordInContextResult,
    check_layer,
    compare_poolings,
    embed,
    similarity,
    word_in_context,
)
from .fill_mask import MASK_PATTERN, MAX_MASKS, MAX_TOP_K, fill_mask, mask_word, text_segments
from .evaluation import FillMaskEval, evaluate_fill_mask, heldout_sentences
from .loading import get_device, is_loaded, load_model, load_tokenizer, set_device
from .masking import MaskingPolicy, apply_masking
from .masking_lab import (
    MAX_EPOCHS,
    POLICY_PRESETS,
    MaskedLMLoss,
    MaskingSimulation,
    MaskingStatistics,
    compare_policies,
    masked_lm_loss,
    masking_statistics,
    next_sentence,
    simulate_masking,
)
from .pretrain import (
    SHIPPED_RUN,
    TINY_MAX_STEPS,
    PretrainConfig,
    TrainEvent,
    TrainingHistory,
    load_history,
    train_mlm,
    train_tiny,
)
from .projection import project_2d
from .registry import SPECS, allow_hub_models, availability, default_model_key, get_spec, list_models
from .results import (
    FillMaskResult,
    MaskPrediction,
    ModelInfo,
    ModelSpec,
    Prediction,
    TokenizationResult,
)
from .schedule import TrainingSchedule
from .sentence_sets import bank_demo, groups_text, parse_groups, sentence_groups
from .separation import SeparationScore, best_pooling, separation_score
from .tokenization import tokenize
from .validation import MAX_TEXT_CHARS

__all__ = [
    "BenchmarkPoint",
    "BenchmarkResult",
    "benchmark_forward",
    "ArchitectureFacts",
    "CompareFillMaskResult",
    "CompareTokensResult",
    "MaskAgreement",
    "ModelPieces",
    "SkippedModel",
    "TrainingRecipe",
    "architecture_table",
    "compare_fill_mask",
    "compare_tokens",
    "training_recipes",
    "AttentionResult",
    "HEAD_FILTERS",
    "HeadStatistics",
    "attention_head_stats",
    "attention_rollout",
    "rollout_of",
    "extract_attention",
    "filter_heads",
    "head_statistics",
    "POOLINGS",
    "SeparationScore",
    "SimilarityResult",
    "WordInContextResult",
    "compare_poolings",
    "embed",
    "project_2d",
    "separation_score",
    "similarity",
    "word_in_context",
    "CapabilityError",
    "EncoderLabError",
    "FillMaskEval",
    "MaskedLMLoss",
    "MaskingPolicy",
    "MaskingSimulation",
    "MaskingStatistics",
    "POLICY_PRESETS",
    "compare_policies",
    "masked_lm_loss",
    "masking_statistics",
    "next_sentence",
    "simulate_masking",
    "PretrainConfig",
    "TINY_MAX_STEPS",
    "TrainEvent",
    "TrainingHistory",
    "apply_masking",
    "evaluate_fill_mask",
    "load_history",
    "train_mlm",
    "train_tiny",
    "FillMaskResult",
    "InputError",
    "MAX_MASKS",
    "MAX_TEXT_CHARS",
    "MAX_TOP_K",
    "MaskPrediction",
    "ModelInfo",
    "ModelSpec",
    "ModelUnavailableError",
    "Prediction",
    "SPECS",
    "TokenizationResult",
    "UnknownModelError",
    "default_model_key",
    "fill_mask",
    "get_device",
    "get_spec",
    "list_models",
    "mask_word",
    "text_segments",
    "load_model",
    "load_tokenizer",
    "set_device",
    "tokenize",
    # used by the UI components (added with the per-tab layout)
    "STAT_NAMES",
    "DEFAULT_LENGTHS",
    "benchmark_models",
    "limits_for",
    "continues_word",
    "MAX_SENTENCES",
    "check_layer",
    "MASK_PATTERN",
    "heldout_sentences",
    "is_loaded",
    "MAX_EPOCHS",
    "SHIPPED_RUN",
    "allow_hub_models",
    "availability",
    "TrainingSchedule",
    "bank_demo",
    "groups_text",
    "parse_groups",
    "sentence_groups",
    "best_pooling",
]
