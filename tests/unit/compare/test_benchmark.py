"""Forward-pass benchmark: sane timings, honest labels, bounded requests."""

from __future__ import annotations

import re

import pytest
import torch

from models import (
    InputError,
    ModelUnavailableError,
    UnknownModelError,
    benchmark_forward,
    get_device,
    get_spec,
    list_models,
)
from models.compare.architecture import architecture_facts
from models.registry.catalogue import availability
from models.compare.benchmark import PRETRAINED, RANDOM_INIT, LiveTensorBytes, _random_init, _running, limits_for


@pytest.fixture(scope="module")
def minilm():
    return benchmark_forward("minilm-l6", [32, 128, 512], batch_size=1)


def test_pretrained_timings_are_sane(minilm):
    assert minilm.weights == PRETRAINED and minilm.label == "minilm-l6"
    assert [p.length for p in minilm.points] == [32, 128, 512]
    for p in minilm.points:
        assert p.runs >= 3 and p.batch_size == 1
        assert 0 < p.min_ms <= p.median_ms <= p.max_ms
        assert p.tokens_per_s == pytest.approx(p.length / (p.median_ms / 1000))
    # how fast is for bench/ (BENCHMARKS.md); here only that the figures are consistent


def test_peak_memory_holds_at_least_the_output(minilm):
    hidden = 384  # all-MiniLM-L6-v2 (config.json of the installed package)
    itemsize = {"float32": 4, "float16": 2, "bfloat16": 2}[minilm.dtype]  # float16 on a GPU
    for p in minilm.points:
        output_mib = p.batch_size * p.length * hidden * itemsize / 2**20  # last_hidden_state
        assert p.peak_memory_mb >= output_mib
    peaks = [p.peak_memory_mb for p in minilm.points]
    assert peaks == sorted(peaks) and peaks[-1] > peaks[0]
    # Each device says what it counts; both leave the weights out. CPU: "activations, weights
    # excluded"; CUDA: "(weights, inputs, other models: excluded)".
    assert re.search(r"\bweights\b[^.;]*\bexcluded\b", minilm.memory_measure)
    counter = "torch.cuda.max_memory_allocated" if minilm.device.startswith("cuda") else "torch dispatch mode"
    assert counter in minilm.memory_measure


def test_live_tensor_bytes_counts_what_is_alive_at_once():
    with torch.inference_mode(), LiveTensorBytes() as tracked:
        a = torch.ones(1024, 256)  # 1 MiB
        b = a * 2  # another 1 MiB
        view = b[:10]  # a view: no new storage
        del a, b, view
        c = torch.zeros(512, 256)  # 0.5 MiB, after the others were freed
    assert tracked.peak == 2 * 2**20
    assert tracked.live == 512 * 256 * 4
    del c


def test_random_init_is_labelled():
    key = "electra-small-generator"
    if next(m for m in list_models() if m.key == key).available:
        pytest.skip(f"{key} has real weights on this machine")
    result = benchmark_forward(key, [32, 64], 1)
    assert result.weights == RANDOM_INIT and result.random_init
    assert result.label == f"{key} ({RANDOM_INIT})"
    assert [p.length for p in result.points] == [32, 64]
    why = availability(get_spec(key))[1]  # the registry's reason, kept in the result
    assert result.weights_reason == why
    assert result.weights_detail == f"{RANDOM_INIT} (real weights unavailable: {why})"


def test_a_failed_load_falls_back_with_its_reason(monkeypatch):
    from models.compare import benchmark

    def refuse(*args, **kwargs):
        raise ModelUnavailableError("the weights file is corrupt")

    monkeypatch.setattr(benchmark, "load_model", refuse)
    result = benchmark_forward("splade-tiny", [16], 1)
    assert result.random_init and result.weights_reason == "the weights file is corrupt"
    assert "real weights unavailable: the weights file is corrupt" in result.weights_detail


def test_random_init_weights_are_ordinary_numbers():
    model = _random_init(get_spec("electra-small-generator"), torch.device("cpu"), torch.float32)
    ids = torch.randint(5, 1000, (1, 16))
    with torch.inference_mode():
        out = model(input_ids=ids).last_hidden_state
    assert torch.isfinite(out).all() and out.abs().max() > 0


def test_lengths_beyond_the_context_are_skipped_with_why():
    result = benchmark_forward("splade-tiny", [16, 1024], 1)
    assert [p.length for p in result.points] == [16]
    assert result.skipped == ((1024, "beyond splade-tiny's max context of 512 tokens"),)


@pytest.mark.parametrize(
    ("lengths", "batch", "words"),
    [
        ([1024, 2048], 1, "beyond"),
        ([], 1, "at least one"),
        (list(range(16, 160, 16)), 1, "At most"),
        ([64], 0, "batch_size"),
        ([4], 1, "sequence length"),
    ],
)
def test_refused_requests(lengths, batch, words):
    with pytest.raises(InputError, match=words):
        benchmark_forward("splade-tiny", lengths, batch)


@pytest.mark.parametrize(("lengths", "batch", "words"),
                         [([], 1, "at least one sequence length"), ([64], 0, "batch_size")])
def test_a_mistake_in_the_request_is_said_once_not_per_model(lengths, batch, words):
    from models.compare.benchmark import benchmark_models

    keys = ["splade-tiny", "mini-bert", "mini-roberta"]
    with pytest.raises(InputError, match=words) as raised:
        benchmark_models(keys, lengths, batch)
    message = str(raised.value)
    assert message.count(words) == 1 and not any(f"{key}:" in message for key in keys)


# The cap on batch x length of one forward pass, by device (models/compare/benchmark.py;
# docs/compare.md for the CPU): (largest batch, tokens per forward pass).
DEVICE_CAPS = {"cpu": (8, 2_048), "cuda": (64, 262_144), "mps": (64, 262_144)}


def test_tokens_per_forward_pass_are_capped_for_the_device():
    """The largest batch allowed, one token per sequence over the device's cap. CPU: 8 x 257
    tokens on splade-tiny (context 512); GPU: 64 x 4,097, which only a long-context model
    reaches (modernbert-base, 8,192): every 512-token model fits a GPU's cap."""
    device = get_device()
    max_batch, max_tokens = DEVICE_CAPS[device.type]
    limits = limits_for(device)
    assert (limits.max_batch, limits.max_tokens) == (max_batch, max_tokens)
    length = max_tokens // max_batch + 1
    key = "splade-tiny" if device.type == "cpu" else "modernbert-base"
    assert architecture_facts(get_spec(key)).max_context >= length  # refused for the cap, not the context
    with pytest.raises(InputError, match=f"tokens per forward pass; on this device \\({device.type}\\) "
                                         f"the limit is {max_tokens:,}"):
        benchmark_forward(key, [length], max_batch)


def test_one_benchmark_at_a_time():
    with _running:
        with pytest.raises(InputError, match="already running"):
            benchmark_forward("splade-tiny", [16], 1)


def test_unknown_model():
    with pytest.raises(UnknownModelError, match="Unknown model"):
        benchmark_forward("gpt-2", [16], 1)
    assert get_spec("splade-tiny").key == "splade-tiny"


def test_gpu_clocks_stop_after_the_queued_work(monkeypatch):
    from models.compare.benchmark import _sync

    calls = []
    monkeypatch.setattr(torch.mps, "synchronize", lambda: calls.append("mps"))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: calls.append("cuda"))
    _sync(torch.device("mps"))
    _sync(torch.device("cuda"))
    _sync(torch.device("cpu"))
    assert calls == ["mps", "cuda"]
