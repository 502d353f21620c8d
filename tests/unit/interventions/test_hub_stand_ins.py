"""The Hub's MLMs through the interventions, on local stand-ins: each Hub id's folder in a
Hugging Face cache of this test holds the mini zoo's model of the same family (the real
transformers classes; ELECTRA: its generator), loaded offline in a fresh process. Each
answer must be the one the same weights give under the mini zoo's key, which the
every-family tests hold against transformers itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from helpers import REPO, fake_hub_cache
from models.registry.zoo_entries import zoo_folder

# Hub id -> (registry key, the mini zoo model of its family)
STAND_INS = {
    "bert-base-uncased": ("bert-base", "mini-bert"),
    "roberta-base": ("roberta-base", "mini-roberta"),
    "distilbert-base-uncased": ("distilbert-base", "mini-distilbert"),
    "albert-base-v2": ("albert-base", "mini-albert"),
    "answerdotai/ModernBERT-base": ("modernbert-base", "mini-modernbert"),
    "google/electra-small-generator": ("electra-small-generator", "mini-electra"),
    "microsoft/deberta-v3-base": ("deberta-v3-base", "mini-deberta"),
}

SCRIPT = textwrap.dedent(
    """
    import json, sys
    from models import EncoderLabError, ablate_heads, head_importance, logit_lens, patch_activations
    text, corrupt = "The capital of France is [MASK].", "The capital of Italy is [MASK]."

    def answers(key):
        try:
            lens = logit_lens(key, text)
        except EncoderLabError as exc:
            return [type(exc).__name__, str(exc)]
        ablated = ablate_heads(key, text, [(lens.num_layers - 1, 0)], target="paris")
        grid = head_importance(key, text)
        patched = patch_activations(key, text, corrupt)
        return {
            "lens": [[g.token_id, round(g.probability, 5)] for row in lens.layers for g in row.top],
            "after": [[g.token_id, round(g.probability, 5)] for g in ablated.masks[0].after],
            "p_after": round(ablated.p_target_after, 5),
            "importance": [round(float(x), 4) for x in grid.delta_log_p.ravel()],
            "patched": [round(float(x), 5) for x in patched.p_patched.ravel()],
        }

    print(json.dumps({key: answers(key) for key in sys.argv[1:]}))
    """
)


def test_hub_mlms_on_local_stand_ins(tmp_path):
    cache = tmp_path / "hub"
    for hub_id, (_, zoo_key) in STAND_INS.items():
        folder = zoo_folder(zoo_key)
        if zoo_key == "mini-electra":  # the generator, with the tokenizer beside it
            folder = tmp_path / "electra-generator"
            folder.mkdir()
            for f in [*zoo_folder(zoo_key).joinpath("generator").iterdir(),
                      *(zoo_folder(zoo_key) / n for n in ("tokenizer.json", "tokenizer_config.json"))]:
                (folder / f.name).write_bytes(f.read_bytes())
        fake_hub_cache(cache, hub_id, folder)
    keys = [key for key, _ in STAND_INS.values()] + [zoo for _, zoo in STAND_INS.values()]
    env = dict(os.environ, HF_HUB_CACHE=str(cache), HF_HUB_OFFLINE="1")
    out = subprocess.run([sys.executable, "-c", SCRIPT, *keys], cwd=REPO, env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    data = json.loads(out.stdout.strip().splitlines()[-1])
    for key, zoo_key in STAND_INS.values():
        if key == "deberta-v3-base":  # released without an MLM head: refused, with the reason
            assert data[key][0] == "CapabilityError" and "masked-LM head" in data[key][1]
            continue
        assert data[key] == data[zoo_key], key
        assert len(data[key]["importance"]) > 1
