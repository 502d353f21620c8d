"""Class rounds through gradio_client: the four endpoints, as a notebook or curl would use them."""

from __future__ import annotations

import pytest
from gradio_client.exceptions import AppError

from models import fill_mask, round_results

TEXT = "The capital of France is [MASK]."


def test_a_round_through_the_api(client, mlm_key):
    ticket = client.predict(TEXT, mlm_key, 5, api_name="/open_round")
    code, token = ticket["code"], ticket["teacher_token"]
    assert len(code) == 6 and token and ticket["model_key"] == mlm_key
    sent = [client.predict(code, guess, student, api_name="/submit_guess")
            for student, guess in [("api-student-1", "Rome"), ("api-student-2", "Paris"), ("api-student-1", "PARIS")]]
    assert [s["replaced"] for s in sent] == [False, False, True]
    results = client.predict(code, api_name="/round_results")
    assert results["students"] == 2 and results["counts"] == {"paris": 2}
    expected = fill_mask(mlm_key, TEXT, top_k=10).masks[0].predictions
    assert [p["token_id"] for p in results["model_top"]] == [p.token_id for p in expected]
    # the same round read here, in this process, from the database the app writes (the core's
    # own figures are held to transformers' pipeline in tests/unit/classroom)
    here = round_results(code)
    assert {k: results[k] for k in ("counts", "students", "favourite", "favourite_rank", "scored_students")} == \
        {"counts": here.counts, "students": 2, "favourite": here.favourite, "favourite_rank": here.favourite_rank,
         "scored_students": 2}
    assert results["mean_nll"] == pytest.approx(here.mean_nll, rel=1e-4)
    assert results["favourite"] == "paris" and results["favourite_rank"] >= 1

    with pytest.raises(AppError, match="Wrong teacher token"):
        client.predict(code, "not-the-token", api_name="/close_round")
    assert client.predict(code, token, api_name="/close_round")["state"] == "closed"
    with pytest.raises(AppError, match="is closed"):
        client.predict(code, "lyon", "api-student-3", api_name="/submit_guess")


@pytest.mark.parametrize("guess, message", [("", "empty"), ("two words", "one word"), ("a" * 41, "limit is 40"),
                                            ("<script>", "markup")])
def test_bad_guesses_through_the_api_say_why(client, mlm_key, guess, message):
    code = client.predict(TEXT, mlm_key, 5, api_name="/open_round")["code"]
    with pytest.raises(AppError, match=message):
        client.predict(code, guess, "api-student-1", api_name="/submit_guess")
    assert client.predict(code, api_name="/round_results")["students"] == 0
