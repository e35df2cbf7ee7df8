"""`rerankit serve` as the pages start it (open, the default pipelines), in a thread of the
test process on a free port, once ready: the service the recipe tests send the pages'
requests to."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

#: the address the pages' commands send to (`rerankit serve`'s default)
DEFAULT_URL = "http://127.0.0.1:8080"


@contextlib.contextmanager
def default_service() -> Iterator[str]:
    """The service's URL while it runs (the default loads and warms up first, within 600
    s); stopped after."""
    import httpx
    import uvicorn

    from rerankit.server import ServerSettings, create_app
    from rerankit.server.connections import uvicorn_config

    settings = ServerSettings()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = uvicorn_config(
        create_app(settings), settings, host="127.0.0.1", port=port, log_level="warning"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    deadline, ready = time.time() + 600, None
    while time.time() < deadline:
        try:
            ready = httpx.get(f"{url}/ready", timeout=30)
            if ready.json()["status"] != "loading":
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    try:
        assert ready is not None and ready.status_code == 200, ready and ready.text  # not failed
        yield url
    finally:
        server.should_exit = True
        thread.join(10)


def curl_json(line: str, url: str) -> Any:
    """The JSON answer of the pages' shell ``line`` (a curl to :data:`DEFAULT_URL`), sent to
    ``url`` instead."""
    assert DEFAULT_URL in line
    done = subprocess.run(
        ["sh", "-c", line.replace(DEFAULT_URL, url)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout)
