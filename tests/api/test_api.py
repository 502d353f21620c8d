"""The running app, called through gradio_client as any API user would."""

from __future__ import annotations

import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

from helpers import MLM_KEY, REPO, skip_if_available, wait_until


def test_api_lists_named_endpoints(client):
    names = set(client.view_api(print_info=False, return_format="dict")["named_endpoints"])
    assert {"/fill_mask", "/fill_mask_live", "/list_models", "/model_card"} <= names


def test_readme_lists_every_endpoint_and_no_other(client):
    """The README's Layout section names the API a gradio_client user can call: exactly the
    app's named endpoints (a UI-only step left public shows up as an extra, e.g. /lambda_1)."""
    import re

    names = {n.lstrip("/") for n in client.view_api(print_info=False, return_format="dict")["named_endpoints"]}
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    paragraph = re.search(r"Every event that computes a view has an `api_name`.*?\n\n", readme, re.S).group(0)
    listed = re.findall(r"`([a-z_]+)`", paragraph.split("so `gradio_client` can call it:")[1].split(". ")[0])
    assert len(listed) == len(set(listed)), "an endpoint listed twice"
    assert set(listed) == names, (sorted(names - set(listed)), sorted(set(listed) - names))


def test_fill_mask_endpoint(client):
    table, plot, filled, status, bars = client.predict(
        "The capital of France is [MASK]. The [MASK] sat on the mat.", MLM_KEY, 4, api_name="/fill_mask"
    )
    assert table["headers"] == ["mask", "rank", "token", "probability"]
    rows = table["data"]
    assert len(rows) == 8
    assert [r[0] for r in rows] == [1] * 4 + [2] * 4
    probs = [r[3] for r in rows[:4]]
    assert probs == sorted(probs, reverse=True) and all(0 < p <= 1 for p in probs)
    assert "[MASK]" not in filled and filled.startswith("The capital of France is ")
    assert "2 mask(s)" in status
    assert plot is not None
    assert bars.count("<caption>") == 2 and bars.count("<tr>") == 2 * (1 + 4)  # per mask: header and top 4


def test_fill_mask_matches_the_core(client):
    from models import fill_mask

    table, *_ = client.predict("The [MASK] sat on the mat.", MLM_KEY, 5, api_name="/fill_mask")
    core = fill_mask(MLM_KEY, "The [MASK] sat on the mat.", 5)
    assert [r[2] for r in table["data"]] == [p.token for p in core.masks[0].predictions]
    for row, pred in zip(table["data"], core.masks[0].predictions):
        assert abs(row[3] - pred.score) < 1e-5


@pytest.mark.parametrize(
    ("text", "model", "words"),
    [
        ("No mask here.", MLM_KEY, "no mask"),
        ("", MLM_KEY, "empty"),
        ("The [MASK] sat.", "minilm-l6", "no trained masked-LM head"),
        ("The [MASK] sat.", "not-a-model", "not in the list of choices"),  # Gradio checks the dropdown
    ],
)
def test_bad_input_is_a_readable_error_and_the_app_keeps_serving(client, text, model, words):
    with pytest.raises(AppError) as info:
        client.predict(text, model, 5, api_name="/fill_mask")
    assert words.lower() in str(info.value).lower()
    table, *_ = client.predict("A [MASK] day.", MLM_KEY, 2, api_name="/fill_mask")
    assert len(table["data"]) == 2


def test_unavailable_model_is_explained(client):
    from models import list_models

    unavailable = [m for m in list_models() if not m.available and m.has_mlm_head]
    if not unavailable:
        pytest.skip("every online model is reachable from this machine")
    with pytest.raises(AppError) as info:
        client.predict("The [MASK] sat.", unavailable[0].key, 5, api_name="/fill_mask")
    assert "not available" in str(info.value)


def test_live_endpoint_never_raises(client):
    *_, status, _bars = client.predict("no mask yet", MLM_KEY, 5, True, api_name="/fill_mask_live")
    assert "Add [MASK]" in status
    *_, status, _bars = client.predict("[MASK] " * 30, MLM_KEY, 5, True, api_name="/fill_mask_live")
    assert "limit" in status


def test_models_endpoint(client):
    table = client.predict(api_name="/list_models")
    keys = [row[0] for row in table["data"]]
    assert MLM_KEY in keys and "bert-base" in keys and "modernbert-base" in keys


def test_train_tiny_streams_and_refuses_a_second_run(client):
    job = client.submit(200, 0, api_name="/train_tiny")
    wait_until(job.outputs, "the first training update")  # from then on the lock is held
    with pytest.raises(AppError, match="already going"):
        client.predict(20, 1, api_name="/train_tiny")
    plot, status, probes = job.result(timeout=600)
    assert "Step 200 of 200" in status and "Done." in status
    assert len(probes["data"]) == 3


def _train_when_free(client, steps: int):
    """A tiny run as soon as the server's training lock is free (None while it is held)."""
    try:
        return client.predict(steps, 1, api_name="/train_tiny")
    except AppError as exc:  # a stopped run may take a moment to let go of the lock
        if "already going" in str(exc):
            return None
        raise


def _running_job(client, other):
    from models import TINY_MAX_STEPS

    job = client.submit(TINY_MAX_STEPS, 0, api_name="/train_tiny")
    wait_until(job.outputs, "the first training update")
    with pytest.raises(AppError, match="already going"):
        other.predict(10, 1, api_name="/train_tiny")
    return job


def _stop(client, job) -> None:
    """What the Stop button does: the page posts Gradio's /cancel for the run (the request
    Job.cancel sends, with a timeout for a busy CPU: the server answers once the run's
    current step has ended, which Job.cancel's 5 s do not always cover)."""
    import urllib.parse

    import httpx
    from gradio_client import utils as client_utils

    fn_index = next(e.fn_index for e in client.endpoints.values() if getattr(e, "api_name", None) == "/train_tiny")
    answer = httpx.post(
        urllib.parse.urljoin(client.src_prefixed, client_utils.CANCEL_URL),
        json={"fn_index": fn_index, "session_hash": client.session_hash, "event_id": job.communicator.event_id},
        timeout=300,
    )
    assert answer.json() == {"success": True}


def test_stopping_a_run_releases_the_lock_for_a_new_run(app_server):
    """Stop cancels the run; the training lock is then released, so a new run starts and finishes."""
    trainer = Client(app_server, verbose=False, download_files=False)
    other = Client(app_server, verbose=False, download_files=False)
    job = _running_job(trainer, other)
    _stop(trainer, job)
    plot, status, probes = wait_until(lambda: _train_when_free(other, 10), "the lock to be released", poll_s=0.5)
    assert "Step 10 of 10" in status and "Done." in status
    assert not any("Done." in out[1] for out in job.outputs())  # the stopped run never finished


def test_stop_training_endpoint_stops_a_run_through_the_api(app_server):
    trainer = Client(app_server, verbose=False, download_files=False)
    other = Client(app_server, verbose=False, download_files=False)
    job = _running_job(trainer, other)
    try:
        trainer.predict(api_name="/stop_training")
        wait_until(lambda: _train_when_free(other, 10), "the lock to be released", poll_s=0.5)
    finally:
        _stop(trainer, job)
        wait_until(lambda: _train_when_free(other, 10), "the lock to be released", poll_s=0.5)


def test_another_visitor_s_stop_leaves_the_run_going(app_server):
    """Stop is the starter's: a second session's Stop is refused in words and the run goes on;
    the starter's own Stop through the API then ends it, and its stream says it was stopped."""
    from models import TINY_MAX_STEPS

    trainer = Client(app_server, verbose=False, download_files=False)
    other = Client(app_server, verbose=False, download_files=False)
    job = _running_job(trainer, other)
    try:
        answer = other.predict(api_name="/stop_training")
        assert "another visitor" in answer
        seen = len(job.outputs())
        wait_until(lambda: len(job.outputs()) > seen + 1, "the run to go on after another's Stop", poll_s=0.5)
        assert not job.done()
        assert "Stopping" in trainer.predict(api_name="/stop_training")
        plot, status, probes = job.result(timeout=300)
        assert status.startswith("Stopped by Stop after step") and f"of {TINY_MAX_STEPS}" in status
    finally:
        _stop(trainer, job)
        wait_until(lambda: _train_when_free(other, 10), "the lock to be released", poll_s=0.5)


def test_random_sentence_comes_from_the_heldout_file(client):
    heldout = {line.strip() for line in (REPO / "data" / "heldout.txt").read_text(encoding="utf-8").splitlines()}
    drawn = [client.predict(seed, api_name="/random_sentence") for seed in range(6)]
    assert all(sentence in heldout for sentence in drawn)
    assert client.predict(3, api_name="/random_sentence") == drawn[3]  # the seed decides
    assert len(set(drawn)) > 1


def test_training_snapshot_endpoint(client):
    from models import load_history
    from models.registry.catalogue import REPO_ROOT

    run = REPO_ROOT / "weights" / "minilm-mlm"
    if not (run / "snapshots.json").is_file():
        pytest.skip("no recorded run")
    history = load_history(run)
    table = client.predict(0, api_name="/training_snapshot")
    assert [row[0] for row in table["data"]] == [p[0] for p in history.snapshots[0]["probes"]]


LAB = ["He sat on the bank of the river and watched the water.", MLM_KEY, 0.3, 0.8, 0.1, 0.1, False, 2, "dynamic", 3]


def test_simulate_masking_endpoint(client):
    from models import simulate_masking

    strips, summary = client.predict(*LAB, api_name="/simulate_masking")
    sim = simulate_masking(MLM_KEY, LAB[0], 0.3, 0.8, 0.1, 0.1, False, 2, True, 3)
    assert strips.count('class="strip"') == 2
    assert f"selected per epoch: {', '.join(str(len(e.selected)) for e in sim.epochs)}" in summary


def test_masked_lm_loss_endpoint(client):
    from models import masked_lm_loss, simulate_masking

    table, explain = client.predict(*LAB, 1, api_name="/masked_lm_loss")
    core = masked_lm_loss(MLM_KEY, simulate_masking(MLM_KEY, LAB[0], 0.3, 0.8, 0.1, 0.1, False, 2, True, 3))
    assert f"Loss = {core.loss:.4f} nats" in explain
    assert len(table["data"]) == len(core.positions)


def test_bad_split_refused(client):
    bad = list(LAB)
    bad[3] = 0.5  # 0.5 + 0.1 + 0.1 != 1
    with pytest.raises(AppError, match="add up to 1"):
        client.predict(*bad, api_name="/simulate_masking")


def test_next_sentence_without_nsp_head(client):
    skip_if_available("bert-base")
    with pytest.raises(AppError, match="not available|no next-sentence"):
        client.predict("bert-base", "It rained.", "The streets were wet.", api_name="/next_sentence")
