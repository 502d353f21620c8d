"""The API tests' one client of the app (the server itself: ``app_server`` in tests/conftest.py)."""

import pytest
from gradio_client import Client


@pytest.fixture(scope="module")
def client(app_server):
    return Client(app_server, verbose=False, download_files=False)
