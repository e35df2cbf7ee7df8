"""How a live ``rerankit serve`` process stops: after SIGTERM it keeps serving for
``shutdown_delay`` seconds while ``/ready`` answers 503 ``stopping`` (a load balancer takes
it out first), then stops listening and exits 0; SIGINT, or a second signal, skips the
delay. The drain that follows (queued requests 503, running ones finish) is
tests/server/test_server.py's."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from rerankit import register_reranker
from rerankit.rerankers import ScorerReranker

httpx = pytest.importorskip("httpx", reason="needs the 'server' extra")
pytest.importorskip("fastapi", reason="needs the 'server' extra")

from processes import wait_process_ready  # noqa: E402

from rerankit.server import ServerSettings  # noqa: E402
from rerankit.server.shutdown import StopOnSignal  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
ASK = {"query": "solar power", "documents": ["solar panels", "wind at sea"]}
SETTINGS = '[server]\ndefault = "bm25"\n[pipelines.bm25]\nreranker = "bm25"\n'


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(tmp_path: Path, *flags: str) -> tuple[subprocess.Popen, str]:
    """``rerankit serve`` of one bm25 pipeline in a process of its own, once /ready is 200."""
    settings = tmp_path / "service.toml"
    settings.write_text(SETTINGS)
    port = _free_port()
    log = (tmp_path / f"serve-{port}.log").open("w")
    command = [sys.executable, "-m", "rerankit", "serve", "--settings", str(settings)]
    proc = subprocess.Popen(
        [*command, "--port", str(port), *flags],
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, (tmp_path / f"serve-{port}.log").read_text()
        try:
            if httpx.get(f"{url}/ready", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise TimeoutError(f"rerankit serve was not ready within 60 s on {url}")


def _ask(url: str) -> tuple[int | str, dict]:
    """A new connection each time (as a balancer's new request would open): the status
    and body of /ready, a rerank and /health, or what went wrong."""
    headers = {"Connection": "close"}
    try:
        ready = httpx.get(f"{url}/ready", headers=headers, timeout=5)
        one = httpx.get(f"{url}/ready", params={"model": "bm25"}, headers=headers, timeout=5)
        rerank = httpx.post(f"{url}/v2/rerank", json=ASK, headers=headers, timeout=5)
        health = httpx.get(f"{url}/health", headers=headers, timeout=5)
    except httpx.ConnectError:
        return "refused", {}
    return ready.status_code, {
        "ready": ready.json(),
        "bm25": (one.status_code, one.json()["status"]),
        "rerank": rerank.status_code,
        "health": health.status_code,
    }


@pytest.mark.parametrize("workers", [1, pytest.param(2, marks=pytest.mark.slow)])  # 2: test-slow
def test_after_sigterm_it_serves_for_the_delay_saying_stopping_then_exits_0(tmp_path, workers):
    delay = 3.0  # room for the samples below on a loaded machine
    flags = ["--shutdown-delay", str(delay), "--graceful-timeout", "5"]
    proc, url = _start(tmp_path, *flags, "--workers", str(workers))
    try:
        if workers > 1:
            time.sleep(1.0)  # (the second worker may answer /ready a moment after the first)
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)  # to the supervisor with workers: it passes it on
        # (a supervisor looks at its signals every 0.5 s: its workers hear of it by then)
        first = _ask(url)
        while first[0] == 200 and time.monotonic() < sent + 1.0:
            first = _ask(url)
        during = [(time.monotonic() - sent, first)]
        while time.monotonic() < sent + 0.6 * delay:  # well inside the delay
            during.append((time.monotonic() - sent, _ask(url)))
            time.sleep(0.05)
        code = proc.wait(timeout=30)
        stopped = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 0
    # an ask that a loaded machine made last past the delay may find the port closed,
    # rightly; every one answered within the delay must say "stopping"
    within = [answer for ended, answer in during if ended < delay or answer[0] != "refused"]
    assert len(within) >= 3, during
    for status, body in within:  # every new connection answered, and told the truth
        assert status == 503, (status, body)
        assert body == {
            "ready": {"status": "stopping"},
            "bm25": (503, "stopping"),  # one pipeline's readiness too
            "rerank": 200,
            "health": 200,
        }
    assert stopped >= delay  # it served on for the whole delay before it stopped
    assert _ask(url)[0] == "refused"
    # every line, rerankit's and uvicorn's (its own and the access lines), says when
    log = (tmp_path / f"serve-{url.rsplit(':', 1)[1]}.log").read_text()
    lines = log.splitlines()
    when = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d ")
    assert lines and all(when.match(line) for line in lines), log
    assert any(" rerankit.server.shutdown: " in line for line in lines), log
    assert any('"GET /ready HTTP/1.1" 503' in line for line in lines), log


@pytest.mark.parametrize(
    "signals",
    [
        [signal.SIGINT],
        [signal.SIGTERM, signal.SIGINT],
        pytest.param([signal.SIGTERM, signal.SIGTERM], marks=pytest.mark.slow),
    ],
    ids=["sigint", "sigterm-then-sigint", "sigterm-twice"],
)
def test_sigint_or_a_second_signal_does_not_wait_out_the_delay(tmp_path, signals):
    delay = 120.0  # far longer than the process may take to stop here
    proc, url = _start(tmp_path, "--shutdown-delay", str(delay))
    try:
        for n, sig in enumerate(signals):
            if n:  # in the delay: /ready says stopping, requests are served
                status, body = _ask(url)
                assert status == 503 and body["ready"] == {"status": "stopping"}
                assert body["rerank"] == 200
            proc.send_signal(sig)
        sent = time.monotonic()
        code = proc.wait(timeout=60)
        assert time.monotonic() - sent < delay / 2
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 0


def test_the_delay_is_a_setting_and_a_flag(tmp_path):
    from rerankit.cli import build_parser, serve_settings
    from rerankit.server import ServerSettings

    assert ServerSettings().shutdown_delay == 5.0
    path = tmp_path / "service.toml"
    path.write_text("[server]\nshutdown_delay = 12\ngraceful_timeout = 20\n")
    parse = build_parser().parse_args
    read = serve_settings(parse(["serve", "--settings", str(path)]))
    assert (read.shutdown_delay, read.graceful_timeout) == (12, 20)
    flags = ["serve", "--settings", str(path), "--shutdown-delay", "0", "--graceful-timeout", "3"]
    read = serve_settings(parse(flags))
    assert (read.shutdown_delay, read.graceful_timeout) == (0, 3)
    with pytest.raises(ValueError, match="shutdown_delay"):
        ServerSettings(shutdown_delay=-1)
    with pytest.raises(SystemExit):
        parse(["serve", "--shutdown-delay", "-1"])


class _Sleepy:
    """A scorer that sleeps as many seconds as its query says (a warm-up's: none)."""

    name = "sleepy"

    async def score(self, query, docs, **context):
        await asyncio.sleep(float(query) if query[0].isdigit() else 0)
        return np.zeros(len(docs))


register_reranker("test-sleepy", lambda: ScorerReranker(_Sleepy()))


def test_a_stop_cuts_what_still_runs_at_the_graceful_timeout_with_a_json_503(live_server, caplog):
    """The stop a signal starts (here called as the signal handler would be): queued
    requests get 503 at once, a running one that ends within the graceful timeout gets
    its answer, and one still running then is answered as the queued ones are (JSON 503,
    Retry-After), counted in the log. (A process that uvicorn stops: the test below.)"""
    settings = ServerSettings(
        pipelines={"sleepy": "test-sleepy"}, default="sleepy", max_concurrency=2
    )
    live = live_server(settings)

    def ask(seconds: float) -> tuple[int, str, str]:
        body = {"query": str(seconds), "documents": ["d"]}
        r = httpx.post(f"{live.url}/v2/rerank", json=body, timeout=30)
        return r.status_code, r.headers.get("retry-after", ""), r.json().get("message")

    admission = live.app.state.service.admission
    stop = StopOnSignal(live.app.state.service, 0.0, live.server.handle_exit, grace=1.5)

    def until(ready) -> None:
        deadline = time.monotonic() + 10
        while not ready() and time.monotonic() < deadline:
            time.sleep(0.01)

    with caplog.at_level("INFO", logger="rerankit"), ThreadPoolExecutor(4) as pool:
        ends, cut = pool.submit(ask, 1.0), pool.submit(ask, 20)  # both run
        until(lambda: admission.running == 2)
        queued = [pool.submit(ask, 0) for _ in range(2)]  # wait for a slot
        until(lambda: admission.waiting == 2)
        stop(signal.SIGTERM, None)
        answers = [f.result() for f in (ends, cut, *queued)]
        live.thread.join(10)
    stopping = (503, "1", "the service is shutting down; retry on another instance")
    assert answers == [(200, "", None), stopping, stopping, stopping]
    assert "2 queued requests get 503, 2 running may finish" in caplog.text
    assert "1 request still running after graceful_timeout (1.5 s) cut" in caplog.text
    assert not live.thread.is_alive()


def test_the_stop_line_counts_as_running_only_the_requests_that_hold_a_slot(live_server, caplog):
    """It counted every request in flight as running: one whose body was still arriving
    (or in an answer-cache lookup, or a probe) was said to `may finish`, then got its 503
    for a slot, so the line said 2 running and 1 finished."""
    settings = ServerSettings(pipelines={"sleepy": "test-sleepy"}, default="sleepy")
    live = live_server(settings)
    admission = live.app.state.service.admission
    stop = StopOnSignal(live.app.state.service, 0.0, live.server.handle_exit, grace=5)
    body = b'{"query": "0", "documents": ["d"]}'
    with caplog.at_level("INFO", logger="rerankit"), ThreadPoolExecutor(2) as pool:
        running = pool.submit(
            httpx.post, f"{live.url}/v2/rerank", json={"query": "1.5", "documents": ["d"]}
        )
        slow = socket.create_connection(("127.0.0.1", live.port))
        slow.sendall(  # its headers and half its body: in flight, not yet queued
            b"POST /v2/rerank HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body[:10]
        )
        deadline = time.monotonic() + 10
        while not (admission.running == 1 and len(admission.in_flight) == 2):
            assert time.monotonic() < deadline, "the two requests did not arrive"
            time.sleep(0.01)
        stop(signal.SIGTERM, None)
        slow.sendall(body[10:])
        answer = slow.recv(4096).decode()
        slow.close()
        assert running.result().status_code == 200
        live.thread.join(10)
    assert answer.startswith("HTTP/1.1 503"), answer
    said = "0 queued requests get 503, 1 running may finish, 1 other in flight"
    assert said in caplog.text, caplog.text


def test_a_sigterm_without_a_delay_is_said_too(live_server, caplog):
    """`--shutdown-delay 0` stopped without a line naming the signal: the stop could not be
    told from a crash, nor timed from the log."""
    live = live_server(ServerSettings(pipelines={"bm25": "bm25"}, default="bm25"))
    stop = StopOnSignal(live.app.state.service, 0.0, live.server.handle_exit, grace=5)
    with caplog.at_level("INFO", logger="rerankit"):
        stop(signal.SIGTERM, None)
        live.thread.join(10)
    assert not live.thread.is_alive()
    said = [r.getMessage() for r in caplog.records if "SIGTERM" in r.getMessage()]
    assert said == ["rerankit service: SIGTERM; stopping now (shutdown_delay is 0)"], said
    assert "0 queued requests get 503" in caplog.text  # then the stop, as with a delay


@pytest.mark.parametrize("level", ["info", pytest.param("warning", marks=pytest.mark.slow)])
def test_the_log_level_flag_sets_rerankits_and_uvicorns(tmp_path, level):
    proc, url = _start(tmp_path, "--log-level", level)
    try:
        assert httpx.post(f"{url}/v2/rerank", json=ASK).status_code == 200
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    (log,) = tmp_path.glob("serve-*.log")
    text = log.read_text()
    access = '"POST /v2/rerank HTTP/1.1" 200' in text
    ready = "rerankit service ready" in text  # rerankit's own INFO line
    assert (access, ready) == ((True, True) if level == "info" else (False, False)), text
    assert "no API keys configured" in text  # a warning passes either way


SLOW_SERVE = """
import asyncio, sys
import numpy as np
from rerankit import register_reranker
from rerankit.cli import main
from rerankit.rerankers import ScorerReranker


class Slow:
    name = "slow"

    async def score(self, query, docs, **context):
        await asyncio.sleep(float(query) if query[0].isdigit() else 0)  # the query: how long
        return np.zeros(len(docs))


register_reranker("slow", lambda: ScorerReranker(Slow()))
sys.exit(main(["serve", "--reranker", "slow", *sys.argv[1:]]))
"""


@pytest.mark.slow  # 6 s (a process of its own): make test-slow
def test_requests_running_when_the_graceful_timeout_ends_get_a_json_503_and_are_counted(
    tmp_path,
):
    """On SIGTERM the queued requests get 503 at once, a running one that ends within
    graceful_timeout gets its answer, and one still running then is answered as the
    queued ones are (a JSON 503 with Retry-After, which a balancer retries elsewhere), not
    with uvicorn's plain-text 500 and a traceback; the log counts them, and warned at start
    that the timeout (30 s) is longer than graceful_timeout."""
    import json

    script = tmp_path / "slow_serve.py"
    script.write_text(SLOW_SERVE)
    settings = tmp_path / "service.toml"
    settings.write_text("[server]\nmax_concurrency = 2\n")
    port = _free_port()
    log = tmp_path / "serve.log"
    flags = ["--settings", str(settings), "--port", str(port), "--shutdown-delay", "0"]
    proc = subprocess.Popen(
        [sys.executable, str(script), *flags, "--graceful-timeout", "1.5"],
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"

    def ask(seconds: float) -> tuple[int, str, str]:
        body = {"query": str(seconds), "documents": ["d"]}
        r = httpx.post(f"{url}/v2/rerank", json=body, timeout=30)
        return r.status_code, r.headers.get("retry-after", ""), json.loads(r.text).get("message")

    try:
        wait_process_ready(proc, url, log)

        def waiting(count: int) -> None:  # requests queued for a slot, as /metrics says
            line = f'rerankit_queue_depth{{model="slow"}} {count}.0'
            deadline = time.monotonic() + 10
            while line not in httpx.get(f"{url}/metrics").text:
                assert time.monotonic() < deadline, f"never {count} queued"
                time.sleep(0.02)

        with ThreadPoolExecutor(4) as pool:
            ends, cut = pool.submit(ask, 1.0), pool.submit(ask, 20)  # both run
            time.sleep(0.2)
            queued = [pool.submit(ask, 0) for _ in range(2)]  # wait for a slot
            waiting(2)
            proc.send_signal(signal.SIGTERM)
            answers = [f.result() for f in (ends, cut, *queued)]
        code = proc.wait(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
    stopping = (503, "1", "the service is shutting down; retry on another instance")
    assert answers == [(200, "", None), stopping, stopping, stopping]
    assert code == 0
    text = log.read_text()
    assert "2 queued requests get 503, 2 running may finish" in text, text
    assert "1 request still running after graceful_timeout (1.5 s) cut" in text
    assert "deadline (30 s) is longer than graceful_timeout (1.5 s)" in text
    assert "Traceback" not in text and "Exception in ASGI" not in text
