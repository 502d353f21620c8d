"""Stand-ins: random weights in a Hub model's real shape, found in the Hugging Face cache.

``python -m scripts.standins`` writes them (for tests and benches: timings and memory depend on
the shapes only), each snapshot with the ``MARKER`` file. A cached model with the marker is
served through the normal Hub path, and every view says so: its name and provenance line carry
"stand-in: random weights", and the app never opens on one unless the operator names it.
"""

from __future__ import annotations

from dataclasses import replace

from .spec import ModelSpec

MARKER = "encoder-lab-stand-in.json"
LABEL = "stand-in: random weights"


def is_standin(spec: ModelSpec) -> bool:
    """Does the Hugging Face cache hold a stand-in (the marker file) for this Hub model?"""
    if spec.source_kind != "hub":
        return False
    from huggingface_hub import try_to_load_from_cache

    return isinstance(try_to_load_from_cache(spec.source, MARKER), str)


def labelled(spec: ModelSpec) -> ModelSpec:
    """The spec as the views show it: marked as a stand-in where the cache holds one."""
    if spec.stand_in or not is_standin(spec):
        return spec
    return replace(spec, stand_in=True, display_name=f"{spec.display_name} ({LABEL})",
                   provenance=(f"{LABEL}, in the real shape of {spec.source} (python -m scripts.standins), "
                               "for tests and benches: its answers mean nothing."))


def opened_on(models) -> bool:
    """Did the operator open the app on a stand-in (``--default-model``)? Then the views may open
    on stand-ins too; otherwise they come after every real model."""
    return any(m.default and m.stand_in for m in models)
