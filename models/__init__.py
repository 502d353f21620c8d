"""Encoder Lab's core: a plain Python API over transformers, usable from a notebook.

    from models import list_models, tokenize, fill_mask
    fill_mask("splade-tiny", "The capital of France is [MASK].")

No Gradio and no plotting here: functions take plain arguments and return frozen
dataclasses of Python / NumPy values. ``__all__`` is the API of computations, each under one
name, every one used by the app or shown in the README's notebook section (tested); the
runtime's switches (oneDNN, CUDA graphs) are in ``models.runtime``.
"""

from .attribution.classification import CLASS_ATTRIBUTION_METHODS, attribute_classification
from .attribution.masked_guess import (
    ATTRIBUTION_METHODS,
    DEFAULT_IG_STEPS,
    MAX_IG_STEPS,
    AttributionResult,
    DeletionCurve,
    attribute_fill_mask,
    deletion_curve,
)
from .attention.weights import (
    HEAD_FILTERS,
    STAT_NAMES,
    AttentionResult,
    HeadStatistics,
    head_statistics,
    attention_rollout,
    extract_attention,
    filter_heads,
)
from .errors import (
    CapabilityError,
    EncoderLabError,
    InputError,
    ModelUnavailableError,
    UnknownModelError,
)
from .pretraining.arithmetic import (
    TEXTBOOK_LOGITS,
    TEXTBOOK_TARGET,
    LossArithmetic,
    NSPLoss,
    explain_loss,
    explain_masked_position,
    pair_loss,
)
from .attention.input_embeddings import NO_POSITION_TABLE, InputEmbeddings, input_embeddings
from .compare.architecture import ArchitectureFacts, TrainingRecipe, architecture_table, training_recipes
from .mlm.generation import GenerationResult, generate_left_to_right
from .decoder.next_token import NextTokenResult, next_token
from .decoder.versus import EncoderVsDecoder, VersusRow, encoder_vs_decoder
from .pretraining.causal_eval import evaluate_causal
from .interventions import (
    MAX_PATCH_POSITIONS,
    AblationResult,
    HeadImportance,
    LogitLens,
    PatchResult,
    ablate_heads,
    head_importance,
    logit_lens,
    patch_activations,
)
from .inside import forward_steps, mlm_gradients
from .compare.benchmark import (
    DEFAULT_LENGTHS,
    BenchmarkResult,
    benchmark_forward,
    benchmark_models,
    limits_for,
)
from .compare.side_by_side import (
    CompareFillMaskResult,
    CompareTokensResult,
    SkippedModel,
    compare_fill_mask,
    compare_tokens,
)
from .embeddings.pooling import (
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
from .tasks.classifier import (
    Classification,
    ClassifierResult,
    ProbeLayersResult,
    classify,
    head_model_key,
    probe_layers,
    train_classifier,
)
from .mlm.fill_mask import MASK_PATTERN, fill_mask, mask_word, text_segments
from .mlm.knowledge import PROBE_SETS, KnowledgeProbe, ProbeItem, knowledge_probe
from .pretraining.evaluation import evaluate_fill_mask, heldout_sentences
from .pretraining.masking import MaskingPolicy, apply_masking
from .runtime.loading import get_device, is_loaded, load_model, load_tokenizer, set_device
from .runtime.memory import memory_budget
from .runtime.run_store import kept_run
from .pretraining.masking_lab import (
    MAX_EPOCHS,
    POLICY_PRESETS,
    compare_policies,
    masked_lm_loss,
    masking_statistics,
    simulate_masking,
)
from .pretraining.trainer import (
    SHIPPED_RUN,
    TINY_MAX_STEPS,
    PretrainConfig,
    load_history,
    train_mlm,
    train_tiny,
)
from .registry.capabilities import default_selection, first_capable
from .registry.catalogue import SPECS, allow_hub_models, availability, get_spec, list_models
from .embeddings.projection import project_2d
from .embeddings.retrieval import RetrievalReport, SearchResult, build_index, retrieval_report, search
from .embeddings.sentence_sets import bank_demo, groups_text, parse_groups, sentence_groups
from .embeddings.static_words import static_vs_contextual
from .embeddings.separation import SeparationScore, best_pooling, separation_score
from .mlm.results import FillMaskResult
from .pretraining.objective_heads import ReplacedTokens, detect_replaced, sentence_order
from .registry.spec import CAPABILITIES, ModelSpec
from .registry.zoo_entries import (DECODER_KEYS, ZOO_KEYS, DecoderEntry, ZooEntry, decoder_comparison, detection_figures,
                                   pair_figures, past_budget_of, zoo_comparison)
from .runtime.tokenization import tokenize
from .tasks.task_data import list_tasks
from .embeddings.sentence_encoder import SENTENCE_LOSSES, SentenceEncoderResult, sentence_encoders, train_sentence_encoder
from .pretraining.distillation import STUDENT_SHAPES, DistillResult, distill
from .tasks.live_training import background_runs, live_heads, run_owner, stop_live_training
from .tasks.pair_heads import PairClassification, classify_pair, list_pair_tasks, train_pair_classifier
from .tasks.span_heads import SpanAnswer, SpanHeadResult, answer_span, train_span_head
from .tasks.reading import retrieve_then_read
from .validation import MAX_TEXT_CHARS
from .classroom.checks import MAX_GUESS_CHARS
from .classroom.rounds import (
    MODEL_TOP_K,
    GuessReceipt,
    RoundResults,
    RoundTicket,
    close_round,
    hide_guess,
    open_round,
    reveal_round,
    round_results,
    submit_guess,
)
from .classroom.scoring import GuessScore

__all__ = [
    "CLASS_ATTRIBUTION_METHODS",
    "attribute_classification",
    "DEFAULT_IG_STEPS",
    "MAX_IG_STEPS",
    "ATTRIBUTION_METHODS",
    "AttributionResult",
    "DeletionCurve",
    "attribute_fill_mask",
    "deletion_curve",
    "TEXTBOOK_LOGITS",
    "TEXTBOOK_TARGET",
    "LossArithmetic",
    "NSPLoss",
    "explain_loss",
    "explain_masked_position",
    "pair_loss",
    "evaluate_causal",
    "GenerationResult",
    "generate_left_to_right",
    "NO_POSITION_TABLE",
    "InputEmbeddings",
    "input_embeddings",
    "forward_steps",
    "mlm_gradients",
    "MAX_PATCH_POSITIONS",
    "ablate_heads",
    "head_importance",
    "logit_lens",
    "patch_activations",
    "Classification",
    "ClassifierResult",
    "ProbeLayersResult",
    "classify",
    "head_model_key",
    "probe_layers",
    "train_classifier",
    "RetrievalReport",
    "SearchResult",
    "build_index",
    "retrieval_report",
    "search",
    "list_tasks",
    "BenchmarkResult",
    "benchmark_forward",
    "ArchitectureFacts",
    "CompareFillMaskResult",
    "CompareTokensResult",
    "SkippedModel",
    "TrainingRecipe",
    "architecture_table",
    "compare_fill_mask",
    "compare_tokens",
    "training_recipes",
    "AttentionResult",
    "HEAD_FILTERS",
    "HeadStatistics",
    "head_statistics",
    "attention_rollout",
    "extract_attention",
    "filter_heads",
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
    "static_vs_contextual",
    "CapabilityError",
    "EncoderLabError",
    "MaskingPolicy",
    "POLICY_PRESETS",
    "compare_policies",
    "masked_lm_loss",
    "masking_statistics",
    "simulate_masking",
    "PretrainConfig",
    "TINY_MAX_STEPS",
    "apply_masking",
    "evaluate_fill_mask",
    "load_history",
    "train_mlm",
    "train_tiny",
    "FillMaskResult",
    "InputError",
    "MAX_TEXT_CHARS",
    "ModelSpec",
    "ModelUnavailableError",
    "SPECS",
    "UnknownModelError",
    "fill_mask",
    "PROBE_SETS",
    "KnowledgeProbe",
    "ProbeItem",
    "knowledge_probe",
    "get_device",
    "get_spec",
    "list_models",
    "mask_word",
    "text_segments",
    "load_model",
    "memory_budget",
    "load_tokenizer",
    "set_device",
    "tokenize",
    "ReplacedTokens",
    "detect_replaced",
    "detection_figures",
    "pair_figures",
    "past_budget_of",
    "sentence_order",
    "ZOO_KEYS",
    "DECODER_KEYS",
    "DecoderEntry",
    "decoder_comparison",
    "NextTokenResult",
    "next_token",
    "EncoderVsDecoder",
    "encoder_vs_decoder",
    "CAPABILITIES",
    "default_selection",
    "first_capable",
    "ZooEntry",
    "zoo_comparison",
    "STAT_NAMES",
    "DEFAULT_LENGTHS",
    "benchmark_models",
    "limits_for",
    "MAX_SENTENCES",
    "check_layer",
    "MASK_PATTERN",
    "heldout_sentences",
    "is_loaded",
    "kept_run",
    "MAX_EPOCHS",
    "SHIPPED_RUN",
    "allow_hub_models",
    "availability",
    "bank_demo",
    "groups_text",
    "parse_groups",
    "sentence_groups",
    "best_pooling",
    "STUDENT_SHAPES",
    "DistillResult",
    "distill",
    "background_runs",
    "live_heads",
    "run_owner",
    "stop_live_training",
    "PairClassification",
    "classify_pair",
    "list_pair_tasks",
    "train_pair_classifier",
    "SENTENCE_LOSSES",
    "SentenceEncoderResult",
    "sentence_encoders",
    "train_sentence_encoder",
    "SpanAnswer",
    "SpanHeadResult",
    "answer_span",
    "train_span_head",
    "retrieve_then_read",
    "MAX_GUESS_CHARS",
    "MODEL_TOP_K",
    "close_round",
    "hide_guess",
    "open_round",
    "reveal_round",
    "round_results",
    "submit_guess",
]
