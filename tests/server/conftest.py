"""Shared by the service tests: a live uvicorn server on a free port, in a thread."""

from __future__ import annotations

import socket
import threading
import time

import pytest


class LiveServer:
    """``create_app(settings)`` served on 127.0.0.1 (``url``) until :meth:`stop`."""

    def __init__(self, settings) -> None:
        import uvicorn

        from rerankit.server import create_app
        from rerankit.server.connections import uvicorn_config

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        config = uvicorn_config(  # as `rerankit serve` configures it
            create_app(settings), settings, host="127.0.0.1", port=self.port, log_level="warning"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.time() + 20
        while not self.server.started and time.time() < deadline:
            time.sleep(0.02)
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


@pytest.fixture(scope="session")
def live_server():
    """``live_server(settings)``: a started :class:`LiveServer` (stop it when done)."""
    return LiveServer
