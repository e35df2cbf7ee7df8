"""Shared by the service tests: a live uvicorn server on a free port, in a thread."""

from __future__ import annotations

import socket
import threading
import time

import pytest
from playground_page import chromium


class LiveServer:
    """``create_app(settings)`` served on 127.0.0.1 (``url``) until :meth:`stop`; with
    ``warm`` (the default), once every pipeline's first load attempt has ended (until then
    its requests get 503)."""

    def __init__(self, settings, *, warm: bool = True) -> None:
        import uvicorn

        from rerankit.server import create_app
        from rerankit.server.connections import uvicorn_config

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.app = create_app(settings)
        config = uvicorn_config(  # as `rerankit serve` configures it
            self.app, settings, host="127.0.0.1", port=self.port, log_level="warning"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.time() + 20
        while not self.server.started and time.time() < deadline:
            time.sleep(0.02)
        if not self.server.started:
            raise RuntimeError(f"uvicorn did not start on port {self.port} within 20 s")
        self.url = f"http://127.0.0.1:{self.port}"
        if warm:
            wait_warm(self.url, settings)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def wait_warm(url: str, settings, seconds: float = 180.0) -> None:
    """Wait until no pipeline of the service at ``url`` is in its first load attempt."""
    import httpx

    keys = settings.api_keys
    headers = {"Authorization": f"Bearer {keys[0]}"} if keys else {}
    deadline = time.time() + seconds
    while time.time() < deadline:
        pipelines = httpx.get(f"{url}/info", headers=headers).json()["pipelines"]
        if all(p["state"] != "loading" or p.get("error") for p in pipelines.values()):
            return
        time.sleep(0.02)
    raise TimeoutError(f"the service at {url} did not warm up within {seconds:g} s")


@pytest.fixture(scope="session")
def live_server():
    """``live_server(settings)``: a started :class:`LiveServer` (stop it when done)."""
    return LiveServer


def _wait_ready(client, seconds: float = 180.0) -> None:
    """Wait while the pipelines of a ``TestClient``'s app load, then require /ready's 200
    (a pipeline that failed fails the test at once, with /ready's account)."""
    deadline = time.time() + seconds
    while client.get("/ready").json()["status"] == "loading" and time.time() < deadline:
        time.sleep(0.02)
    ready = client.get("/ready")
    assert ready.status_code == 200, ready.text


@pytest.fixture(scope="session")
def wait_ready():
    """``wait_ready(client)``: see :func:`_wait_ready`."""
    return _wait_ready


@pytest.fixture(scope="module")
def bm25_client(wait_ready):
    """A ``TestClient`` of a service whose one pipeline, the default, is ``bm25``, ready."""
    from fastapi.testclient import TestClient  # as LiveServer: the 'server' extra

    from rerankit.server import ServerSettings, create_app

    settings = ServerSettings(pipelines={"bm25": "bm25"}, default="bm25")
    with TestClient(create_app(settings)) as client:
        wait_ready(client)
        yield client


@pytest.fixture(scope="module")
def browser():
    """A headless Chromium (Selenium) for the playground's page tests."""
    yield from chromium()
