"""The cached loader: one load under concurrency, LRU over a memory budget, failures, device."""

from __future__ import annotations

import threading
import types

import pytest
import torch

from helpers import MLM_KEY, parity_atol
from models import (
    ModelUnavailableError,
    fill_mask,
    get_device,
    load_model,
    load_tokenizer,
)
from models.registry import catalogue as registry
from models.runtime.loading import ModelCache, dtype_for, is_loaded
from models.registry.spec import ModelSpec
from models import get_spec


def test_model_is_cached_and_in_eval_mode(mlm_loaded):
    again = load_model(get_spec(MLM_KEY), head="mlm")
    assert again is mlm_loaded
    assert not again.model.training
    assert again.device == get_device()
    assert again.nbytes == sum(p.numel() * p.element_size() for p in again.model.parameters()) + sum(
        b.numel() * b.element_size() for b in again.model.buffers()
    )
    assert is_loaded(MLM_KEY, "mlm")


def test_device_is_cpu_here_and_dtype_is_half_on_gpu():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    if not torch.cuda.is_available() and torch.backends.mps.is_available():
        expected = "mps"
    assert get_device().type == expected
    assert dtype_for(torch.device("cpu")) == torch.float32
    assert dtype_for(torch.device("cuda")) == torch.float16


def test_concurrent_requests_load_a_model_once():
    cache = ModelCache(budget_bytes=10**9)
    started = threading.Event()
    calls = []

    def slow_loader():
        calls.append(1)
        started.wait(0.5)
        return types.SimpleNamespace(nbytes=10)

    results = []
    threads = [threading.Thread(target=lambda: results.append(cache.get(("k",), slow_loader))) for _ in range(8)]
    for t in threads:
        t.start()
    started.set()
    for t in threads:
        t.join()
    assert len(calls) == 1 and cache.loads == 1
    assert all(r is results[0] for r in results)


def test_real_model_loaded_once_under_concurrency():
    registry_key = ("splade-tiny", "base", None, str(get_device()))
    from models.runtime.loading import MODEL_CACHE

    before = MODEL_CACHE.loads
    already = registry_key in MODEL_CACHE.keys()
    out = []
    threads = [threading.Thread(target=lambda: out.append(load_model(get_spec(MLM_KEY), head="base"))) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(o is out[0] for o in out)
    assert MODEL_CACHE.loads - before == (0 if already else 1)


def test_lru_eviction_over_budget():
    cache = ModelCache(budget_bytes=100)
    for key in ("a", "b", "c"):
        cache.get((key,), lambda: types.SimpleNamespace(nbytes=40))
    assert cache.keys() == [("b",), ("c",)]  # "a" was least recently used
    cache.get(("b",), lambda: pytest.fail("cached: must not reload"))
    cache.get(("d",), lambda: types.SimpleNamespace(nbytes=40))
    assert cache.keys() == [("b",), ("d",)]
    cache.get(("huge",), lambda: types.SimpleNamespace(nbytes=1000))
    assert cache.keys() == [("huge",)]  # the newest always stays


def test_eager_attention_returns_weights():
    loaded = load_model(get_spec(MLM_KEY), head="base", attn_implementation="eager")
    assert loaded.model.config._attn_implementation == "eager"
    enc = loaded.tokenizer("The bank of the river.", return_tensors="pt").to(loaded.device)
    with torch.no_grad():
        out = loaded.model(**enc, output_attentions=True)
    assert len(out.attentions) == loaded.model.config.num_hidden_layers
    row_sums = out.attentions[0].float().sum(-1).cpu()
    assert torch.allclose(row_sums, torch.ones(1), atol=parity_atol(1e-5, 2e-3))


def test_corrupt_model_gives_its_error_and_others_keep_serving(monkeypatch, tmp_path):
    folder = tmp_path / "broken"
    folder.mkdir()
    src = registry.local_path(registry.get_spec(MLM_KEY))
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        (folder / name).write_bytes((src / name).read_bytes())
    (folder / "model.safetensors").write_bytes(b"this is not a safetensors file")
    spec = ModelSpec(
        key="broken", display_name="Broken test model", family="bert", source=str(folder),
        source_kind="local", mask_token="[MASK]", has_mlm_head=True, returns_attention=True,
        provenance="a deliberately corrupt folder made by the test",
    )
    monkeypatch.setitem(registry._BY_KEY, "broken", spec)
    with pytest.raises(ModelUnavailableError, match="Broken test model .broken. could not be loaded"):
        load_model(get_spec("broken"), head="mlm")
    # the failure is not cached as a success, and the other models keep serving
    assert not is_loaded("broken", "mlm")
    assert fill_mask(MLM_KEY, "The [MASK] sat.").masks


def test_tokenizer_cached():
    assert load_tokenizer(get_spec(MLM_KEY)) is load_tokenizer(get_spec(MLM_KEY))


def test_unknown_device_refused():
    from models import set_device

    with pytest.raises(ValueError, match="Unknown device"):
        set_device("tpu")


def test_shared_tokenizer_is_safe_under_concurrent_settings():
    """Threads encoding with different truncation/padding settings get their own settings.

    Unserialised, a fast tokenizer's per-call settings leak between threads (ragged
    "padded" batches, truncated single texts, "Already borrowed" errors), as the load
    test found.
    """
    tokenizer = load_tokenizer(get_spec(MLM_KEY))
    long_text = "word " * 300
    batch = ["short one", "a somewhat longer sentence than the first one is"]
    expected_single = len(tokenizer(long_text, truncation=False, verbose=False)["input_ids"])
    failures = []

    def padded():
        for _ in range(300):
            out = tokenizer(batch, padding=True, truncation=True, max_length=16)["input_ids"]
            if len({len(row) for row in out}) != 1:
                failures.append("ragged padded batch")

    def whole():
        for _ in range(300):
            n = len(tokenizer(long_text, truncation=False, verbose=False)["input_ids"])
            if n != expected_single:
                failures.append(f"single text cut to {n}")

    threads = [threading.Thread(target=f) for f in (padded, whole, padded, whole)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_cache_keeps_no_lock_per_key_after_loading():
    """Keys can be user texts (the attention result cache): nothing may pile up per key."""
    cache = ModelCache(budget_bytes=100)
    for key in range(50):
        cache.get((key,), lambda: types.SimpleNamespace(nbytes=1))
    with pytest.raises(RuntimeError):
        cache.get(("bad",), lambda: (_ for _ in ()).throw(RuntimeError("load failed")))
    assert cache._key_locks == {}


def test_set_device_overrides_the_environment(monkeypatch):
    """set_device (the app's --device) wins over ENCODER_LAB_DEVICE and drops loaded models."""
    from models import set_device
    from models.runtime import loading

    monkeypatch.setattr(loading, "_device_override", loading._device_override)  # restored after
    cleared = []
    # the session's loaded models stay: this test only checks that the cache is told to go
    monkeypatch.setattr(loading, "clear_cache", lambda: cleared.append(True))
    unusable = "mps" if torch.cuda.is_available() else "cuda"  # a device this machine lacks
    monkeypatch.setenv("ENCODER_LAB_DEVICE", unusable)
    assert set_device("cpu") == torch.device("cpu")
    assert get_device() == torch.device("cpu") and cleared == [True]
    assert load_model(get_spec(MLM_KEY), head="mlm").device == torch.device("cpu")
    # back to "auto": the environment decides again, and says why it cannot
    with pytest.raises(ModelUnavailableError, match=f"'{unusable}' was asked for"):
        set_device("auto")
    monkeypatch.setenv("ENCODER_LAB_DEVICE", "cpu")
    assert set_device(None) == torch.device("cpu") and len(cleared) == 3


@pytest.mark.parametrize("key", ["minilm-mlm", "mini-modernbert", "mini-electra", "mini-distilbert"])
def test_the_eager_model_shares_the_loaded_default_s_weights(monkeypatch, key):
    """Asked for eager attention (Attention, Why this guess) while the default one is loaded
    (Fill-mask), the loader rebuilds the class around the same tensors (nothing read from disk,
    nothing held twice) and it answers as transformers' own eager load of the checkpoint."""
    from transformers import AutoModelForMaskedLM

    from models.runtime import loading

    spec = get_spec(key)
    default = load_model(spec, head="mlm")
    loading.MODEL_CACHE.drop((key, "mlm", "eager", str(get_device())))
    name, kwargs = loading._pretrained_args(spec)  # before reads from disk are refused below
    reference = AutoModelForMaskedLM.from_pretrained(name, subfolder=spec.mlm_subfolder, dtype=torch.float32,
                                                     attn_implementation="eager", **kwargs).eval()
    monkeypatch.setattr(loading, "_pretrained_args", lambda _spec: pytest.fail("read from disk again"))
    eager = load_model(spec, head="mlm", attn_implementation="eager")
    assert eager.model.config._attn_implementation == "eager" and not eager.model.training
    ours, theirs = default.model.state_dict(), eager.model.state_dict()
    assert set(ours) == set(theirs) and all(ours[k].data_ptr() == theirs[k].data_ptr() for k in ours)
    ids = default.tokenizer(f"The cat sat on the {default.tokenizer.mask_token} all day.", return_tensors="pt")
    with torch.no_grad():
        got = eager.model(**ids, output_attentions=True)
        want = reference(**ids, output_attentions=True)
    assert torch.allclose(got.logits, want.logits, atol=1e-5)
    assert len(got.attentions) == len(want.attentions)
    assert all(torch.allclose(g, w, atol=1e-6) for g, w in zip(got.attentions, want.attentions))
