"""The lines a stop logs name no request: an SRE saw the SIGTERM, stopping and cut lines
end with ``[request <id>]`` of an unrelated request in flight, whenever the signal came
while that request ran on the event loop (docs/service.md: lines logged outside a request
have no suffix)."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx", reason="needs the 'server' extra")
pytest.importorskip("fastapi", reason="needs the 'server' extra")

from processes import wait_process_ready  # noqa: E402

REPO = Path(__file__).resolve().parents[2]

# a scorer that, for query "block N", holds the event loop N seconds (as CPU-bound work on
# the loop would: the signal then arrives inside that request's context), after touching
# $MARK; for "sleep N" it awaits N seconds (a request still running at the cut)
SERVE = """
import asyncio, os, pathlib, sys, time
import numpy as np
from rerankit import register_reranker
from rerankit.cli import main
from rerankit.rerankers import ScorerReranker


class Busy:
    name = "busy"

    async def score(self, query, docs, **context):
        what, _, seconds = query.partition(" ")
        if what == "block":
            pathlib.Path(os.environ["MARK"]).touch()
            time.sleep(float(seconds))
        elif what == "sleep":
            await asyncio.sleep(float(seconds))
        return np.zeros(len(docs))


register_reranker("busy", lambda: ScorerReranker(Busy()))
sys.exit(main(["serve", "--reranker", "busy", *sys.argv[1:]]))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow  # about 8 s: a process of its own that waits out a stop
def test_the_stop_lines_name_no_request_even_when_the_signal_comes_during_one(tmp_path):
    script, mark, log = tmp_path / "serve.py", tmp_path / "blocking", tmp_path / "serve.log"
    script.write_text(SERVE)
    (tmp_path / "service.toml").write_text("[server]\nmax_concurrency = 4\n")
    port = _free_port()
    flags = ["--settings", str(tmp_path / "service.toml"), "--port", str(port)]
    flags += ["--shutdown-delay", "0.3", "--graceful-timeout", "1"]
    proc = subprocess.Popen(
        [sys.executable, str(script), *flags],
        env={**os.environ, "PYTHONPATH": str(REPO / "src"), "MARK": str(mark)},
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"

    def ask(query: str, rid: str) -> int:
        body = {"query": query, "documents": ["d"]}
        headers = {"X-Request-Id": rid}
        return httpx.post(f"{url}/v2/rerank", json=body, headers=headers, timeout=30).status_code

    try:
        wait_process_ready(proc, url, log)
        with ThreadPoolExecutor(2) as pool:
            sleeping = pool.submit(ask, "sleep 20", "sleeping-request")  # cut at the end
            time.sleep(0.3)
            blocking = pool.submit(ask, "block 1.5", "blocking-request")
            until = time.monotonic() + 10
            while not mark.exists() and time.monotonic() < until:
                time.sleep(0.01)
            assert mark.exists(), log.read_text()
            time.sleep(0.2)  # well inside the 1.5 s the loop is held
            proc.send_signal(signal.SIGTERM)
            answers = blocking.result(), sleeping.result()
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = log.read_text()
    assert answers == (200, 503) and code == 0, text
    stop = [line for line in text.splitlines() if re.search(r"SIGTERM|stopping|cut:", line)]
    assert any("SIGTERM; /ready says stopping" in line for line in stop), text
    assert any("rerankit service stopping:" in line for line in stop), text
    assert any("still running after graceful_timeout (1 s) cut" in line for line in stop), text
    assert not [line for line in stop if "[request" in line], "\n".join(stop)
    # (the requests' own lines still name them)
    assert '"POST /v2/rerank HTTP/1.1" 200 OK [request blocking-request]' in text, text
