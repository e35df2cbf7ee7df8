"""Waiting on a ``rerankit serve`` started as a process of its own (the stop and worker
tests): until its /ready answers 200, failing with its log if the process ends first."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import httpx


def wait_process_ready(proc: subprocess.Popen, url: str, log: Path, seconds: float = 60) -> None:
    """Poll ``url``'s /ready until 200; the process's ``log`` is the failure's message if it
    exits first, and a TimeoutError names the wait."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()
        try:
            if httpx.get(f"{url}/ready", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise TimeoutError(f"the service at {url} was not ready within {seconds:g} s")
