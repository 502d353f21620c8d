"""Ettin's encoder/decoder pair through the normal Hub-loading path, offline, on stand-ins.

Two tiny random-init folders of Ettin's classes (ModernBertForMaskedLM, ModernBertDecoderForCausalLM,
sharing mini-modernbert's tokenizer as Ettin's two models share theirs) are laid out as the
Hugging Face cache lays out jhu-clsp/ettin-encoder-17m and jhu-clsp/ettin-decoder-17m. The
weights are random: the test checks the plumbing (availability, the pair, the classes loaded,
next_token against transformers' own logits, fill-mask's refusal), not what they predict.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import torch
from transformers import (AutoTokenizer, ModernBertConfig, ModernBertDecoderConfig, ModernBertDecoderForCausalLM,
                          ModernBertForMaskedLM)

from helpers import REPO, fake_hub_cache
from models import get_spec
from models.registry.zoo_entries import zoo_folder


def stand_in(folder, model, tokenizer) -> None:
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def test_ettins_pair_is_one_pair_in_the_catalogue():
    enc, dec = get_spec("ettin-encoder-17m"), get_spec("ettin-decoder-17m")
    assert (enc.source, dec.source) == ("jhu-clsp/ettin-encoder-17m", "jhu-clsp/ettin-decoder-17m")
    assert enc.twin == dec.key and dec.twin == enc.key
    assert enc.can("mlm") and not enc.is_decoder and dec.is_decoder and dec.can("clm") and not dec.can("mlm")


def test_the_pair_loads_from_the_hf_cache_offline(tmp_path):
    tokenizer = AutoTokenizer.from_pretrained(zoo_folder("mini-modernbert"))
    shape = dict(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                 num_attention_heads=2, max_position_embeddings=64, pad_token_id=tokenizer.pad_token_id,
                 bos_token_id=tokenizer.cls_token_id, eos_token_id=tokenizer.sep_token_id,
                 cls_token_id=tokenizer.cls_token_id, sep_token_id=tokenizer.sep_token_id)
    torch.manual_seed(0)
    stand_in(tmp_path / "enc", ModernBertForMaskedLM(ModernBertConfig(**shape)), tokenizer)
    stand_in(tmp_path / "dec", ModernBertDecoderForCausalLM(ModernBertDecoderConfig(**shape)), tokenizer)
    cache = tmp_path / "hub"
    fake_hub_cache(cache, "jhu-clsp/ettin-encoder-17m", tmp_path / "enc")
    fake_hub_cache(cache, "jhu-clsp/ettin-decoder-17m", tmp_path / "dec")
    script = textwrap.dedent(
        f"""
        import json, torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from models import CapabilityError, fill_mask, list_models, load_model, next_token
        info = {{m.key: m for m in list_models()}}
        r = next_token("ettin-decoder-17m", "The cat sat on the", top_k=5)
        ref = AutoModelForCausalLM.from_pretrained({str(tmp_path / 'dec')!r}, dtype=torch.float32).eval()
        tok = AutoTokenizer.from_pretrained({str(tmp_path / 'dec')!r})
        ids = tok("The cat sat on the", return_tensors="pt")["input_ids"][:, :-1]
        with torch.no_grad():
            top = ref(input_ids=ids).logits[0, -1].softmax(-1).topk(5)
        try:
            fill_mask("ettin-decoder-17m", "The [MASK] sat.")
            refused = ""
        except CapabilityError as exc:
            refused = str(exc)
        print(json.dumps({{
            "available": [info[k].available for k in ("ettin-encoder-17m", "ettin-decoder-17m")],
            "why": info["ettin-decoder-17m"].availability,
            "classes": [type(load_model(k, head=h).model).__name__
                        for k, h in (("ettin-encoder-17m", "mlm"), ("ettin-decoder-17m", "clm"))],
            "fill": len(fill_mask("ettin-encoder-17m", "The [MASK] sat.", top_k=3).masks[0].predictions),
            "ours": [[p.token_id, p.score] for p in r.predictions],
            "theirs": [top.indices.tolist(), top.values.tolist()],
            "refused": refused,
        }}))
        """
    )
    env = dict(os.environ, HF_HUB_CACHE=str(cache), HF_HUB_OFFLINE="1")
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    data = json.loads(out.stdout.strip().splitlines()[-1])
    assert data["available"] == [True, True] and "Hugging Face cache" in data["why"]
    assert data["classes"] == ["ModernBertForMaskedLM", "ModernBertDecoderForCausalLM"]
    assert data["fill"] == 3
    assert [i for i, _ in data["ours"]] == data["theirs"][0]
    assert all(abs(s - t) < 1e-5 for (_, s), t in zip(data["ours"], data["theirs"][1]))
    assert "a decoder does not fill blanks: see next_token" in data["refused"]
