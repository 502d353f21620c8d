"""Shared fixtures: the Hub mode, the embedded models, a launched app, paths.

The Hub mode is decided here, not by the machine: unless ``ENCODER_LAB_TEST_HUB=1`` is
set, the suite runs with ``HF_HUB_OFFLINE=1`` and an empty Hugging Face cache of its own,
so no test downloads and every Hub model is unavailable, the same offline, online and on
a machine whose cache already holds some. With ``ENCODER_LAB_TEST_HUB=1`` the machine's
own Hub settings and cache are used, and the tests about an unavailable Hub model skip
(with the reason) for the models that can run. This runs when pytest imports this file,
before any test module imports ``huggingface_hub`` (which reads both variables once).
"""

from __future__ import annotations

import os
import tempfile

import pytest

from helpers import ENCODER_KEY, MLM_KEY, hub_opted_in, running_app
from zoo_setup import ensure_test_zoo

if not hub_opted_in():
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_HUB_CACHE"] = tempfile.mkdtemp(prefix="encoder-lab-empty-hub-")
# Runs kept on disk (models/runtime/run_store.py) start empty for every session: a test that
# trains a lesson's run trains it, whatever an earlier session or the app left in .cache.
os.environ.setdefault("ENCODER_LAB_RUNS_DIR", tempfile.mkdtemp(prefix="encoder-lab-runs-kept-"))
# Class rounds (models/classroom/store.py) in a database of the session's own, which every app
# the tests start shares (as the replicas of `make serve-replicas` share theirs).
os.environ.setdefault("ENCODER_LAB_ROUNDS_DB",
                      f"sqlite:///{tempfile.mkdtemp(prefix='encoder-lab-rounds-')}/rounds.sqlite3")


def pytest_configure(config):
    """Before any test module imports ``models``: a complete mini zoo to test against."""
    ensure_test_zoo()


def pytest_report_header(config):
    if hub_opted_in():
        return "Hugging Face Hub: this machine's settings and cache (ENCODER_LAB_TEST_HUB=1)"
    return "Hugging Face Hub: offline, empty cache (set ENCODER_LAB_TEST_HUB=1 to use the Hub)"


@pytest.fixture(scope="session")
def mlm_key() -> str:
    return MLM_KEY


@pytest.fixture(scope="session")
def encoder_key() -> str:
    return ENCODER_KEY


@pytest.fixture
def half_precision(monkeypatch):
    """Models load in float16, as on a GPU, here on the CPU (the half-precision paths a GPU takes),
    into a model cache of their own; the cached results are emptied before and after."""
    import torch

    from models.runtime import loading

    monkeypatch.setattr(loading, "dtype_for", lambda device: torch.float16)
    # the float16 models in caches of their own: the float32 ones other tests hold (``mlm_loaded``)
    # stay the ones the core serves afterwards
    monkeypatch.setattr(loading, "MODEL_CACHE", loading.ModelCache(loading.MODEL_CACHE.budget_bytes))
    monkeypatch.setattr(loading, "_tokenizers", {})
    loading.clear_cache()  # the stand-ins, and the results computed in float32
    yield
    loading.clear_cache()  # the stand-ins, and the results computed in float16


@pytest.fixture(scope="session")
def postgres_server():
    """A throwaway PostgreSQL server (Debian's, run as the postgres user) for the session."""
    from postgres_cluster import postgres_bin, postgres_cluster

    if postgres_bin() is None:
        pytest.skip("PostgreSQL is not installed (make postgresql)")
    with postgres_cluster() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def rounds_db(request, tmp_path, monkeypatch) -> str:
    """Class rounds in a new, empty database: a SQLite file, or a database on ``postgres_server``."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'rounds.sqlite3'}"
    else:
        from postgres_cluster import fresh_database

        url = fresh_database(request.getfixturevalue("postgres_server"))
    monkeypatch.setenv("ENCODER_LAB_ROUNDS_DB", url)
    return url


@pytest.fixture(scope="session")
def mlm_loaded():
    """The embedded MLM, loaded once per session."""
    from models import get_spec, load_model

    return load_model(get_spec(MLM_KEY), head="mlm")




@pytest.fixture(scope="session")
def app_server():
    """The app, shared by the API and browser tests of a session."""
    with running_app() as url:
        yield url
