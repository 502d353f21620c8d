"""Heavy requests share one queue slot: they wait for each other, quick ones do not wait."""

from __future__ import annotations

from gradio_client import Client
from gradio_client.utils import Status

from helpers import MLM_KEY, wait_until

HEAVY_ARGS = (MLM_KEY, 0.15, 0.8, 0.1, 0.1, False, 1000, 0)  # 1,000 sentences x 1,000 draws


def test_quick_requests_are_not_starved_by_heavy_ones(app_server):
    heavy_client = Client(app_server, verbose=False, download_files=False)
    quick = Client(app_server, verbose=False, download_files=False)
    quick.predict("The [MASK] sat on the mat.", MLM_KEY, 3, api_name="/fill_mask")  # warm
    heavy = [heavy_client.submit(*HEAVY_ARGS, api_name="/masking_statistics") for _ in range(3)]

    def processing() -> int:
        return sum(job.status().code == Status.PROCESSING for job in heavy)

    wait_until(processing, "the first heavy job to start")  # an event, not a guessed sleep
    answered, running_at_once = [], [processing()]
    for _ in range(3):
        table, *_ = quick.predict("The [MASK] sat on the mat.", MLM_KEY, 3, api_name="/fill_mask")
        answered.append(len(table["data"]))
        running_at_once.append(processing())
    assert answered == [3, 3, 3]
    # The quick answers came back while heavy work was still queued or running ...
    assert not all(job.done() for job in heavy)
    # ... and the heavy jobs never ran side by side: they share one slot.
    assert max(running_at_once) == 1
    for job in heavy:
        plot, note = job.result(timeout=600)
        assert "1000 draws" in note.replace(",", "")
