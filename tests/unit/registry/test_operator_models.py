"""Only registry models load, unless the operator allows more Hub ids; those load from
safetensors only, and a checkpoint without the trained head a task needs is refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from safetensors.torch import load_file
import torch

from helpers import ENCODER_KEY, MLM_KEY, REPO, fake_hub_cache
from models.registry import catalogue as registry


def test_operator_allowed_hub_models(tmp_path):
    cache = tmp_path / "hub"
    mlm_folder = registry.local_path(registry.get_spec(MLM_KEY))
    fake_hub_cache(cache, "acme/tiny-mlm", mlm_folder)
    fake_hub_cache(cache, "acme/never-allowed", mlm_folder)
    fake_hub_cache(cache, "acme/encoder-only", registry.local_path(registry.get_spec(ENCODER_KEY)))
    # The same MLM, but as a pickled checkpoint: refused (only safetensors load).
    pickled = tmp_path / "pickled"
    pickled.mkdir()
    for f in mlm_folder.iterdir():
        if f.is_file() and f.name != "model.safetensors":
            (pickled / f.name).write_bytes(f.read_bytes())
    torch.save(load_file(mlm_folder / "model.safetensors"), pickled / "pytorch_model.bin")
    fake_hub_cache(cache, "acme/pickled-mlm", pickled)

    script = textwrap.dedent(
        """
        import json
        from models import fill_mask, list_models, EncoderLabError

        def outcome(key):
            try:
                r = fill_mask(key, "The capital of France is [MASK].", top_k=3)
                return ["ok", [p.token for p in r.masks[0].predictions]]
            except EncoderLabError as exc:
                return [type(exc).__name__, str(exc)]

        listed = {m.key: m for m in list_models()}
        print(json.dumps({
            "listed": sorted(k for k in listed if k.startswith("acme/")),
            "provenance": listed["acme/tiny-mlm"].provenance,
            "available": listed["acme/tiny-mlm"].available,
            "default": [k for k, m in listed.items() if m.default],
            "tiny": outcome("acme/tiny-mlm"),
            "registry": outcome("splade-tiny"),
            "pickled": outcome("acme/pickled-mlm"),
            "encoder": outcome("acme/encoder-only"),
            "never": outcome("acme/never-allowed"),
        }))
        """
    )
    env = dict(os.environ, HF_HUB_CACHE=str(cache), HF_HUB_OFFLINE="1",
               ENCODER_LAB_EXTRA_MODELS="acme/tiny-mlm, acme/pickled-mlm,acme/encoder-only")
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    data = json.loads(out.stdout.strip().splitlines()[-1])
    assert data["listed"] == ["acme/encoder-only", "acme/pickled-mlm", "acme/tiny-mlm"]
    assert "not vetted" in data["provenance"] and data["available"] is True
    assert data["default"] == ["minilm-mlm"]  # an operator model never becomes the default
    assert data["tiny"][0] == "ok"
    # Same weights, same answers as the registry entry they were copied from.
    assert data["tiny"][1] == data["registry"][1]
    assert data["pickled"][0] == "ModelUnavailableError" and "safetensors" in data["pickled"][1]
    assert data["encoder"][0] == "CapabilityError" and "no trained weights" in data["encoder"][1]
    assert data["never"][0] == "UnknownModelError"


def test_invalid_operator_ids_are_refused(monkeypatch):
    import pytest

    from models import UnknownModelError

    monkeypatch.setenv(registry.EXTRA_MODELS_ENV, "../../etc/passwd")
    with pytest.raises(UnknownModelError, match="invalid Hub ids"):
        registry.allowed_hub_models()
    monkeypatch.setenv(registry.EXTRA_MODELS_ENV, "")
    assert registry.allowed_hub_models() == ()
