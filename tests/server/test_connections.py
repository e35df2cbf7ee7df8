"""Connection hygiene: clients that send part of a request and stop lose their connection
after the body or header timeout, and the service stays responsive meanwhile."""

from __future__ import annotations

import socket
import time

import pytest

httpx = pytest.importorskip("httpx", reason="needs the 'server' extra")
pytest.importorskip("fastapi", reason="needs the 'server' extra")

from rerankit.server import ServerSettings  # noqa: E402

HALF_OPEN = 200  # of each kind: partial headers, partial body


@pytest.fixture(scope="module")
def strict(live_server):
    settings = ServerSettings(
        pipelines={"bm25": "bm25"},
        default="bm25",
        body_timeout=1.0,
        header_timeout=1.0,
        keep_alive_seconds=1.0,
        max_connections=2 * HALF_OPEN + 50,
    )
    server = live_server(settings)
    yield server
    server.stop()


def _open(port: int, payload: bytes) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(payload)
    return s


def _closed_by_server(s: socket.socket, wait: float) -> bytes | None:
    """What the server sent before closing the connection, or None if it is still open."""
    s.settimeout(wait)
    data = b""
    try:
        while True:
            chunk = s.recv(4096)
            if not chunk:
                return data
            data += chunk
    except TimeoutError:
        return None
    except ConnectionResetError:
        return data


def _health_ms(url: str, n: int = 10) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        assert httpx.get(f"{url}/health").status_code == 200
        times.append(time.perf_counter() - start)
    return 1000 * sorted(times)[n // 2]


def test_half_sent_requests_are_closed_and_health_stays_fast(strict):
    baseline = _health_ms(strict.url)
    body_head = (
        b"POST /v1/rerank HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 500\r\n\r\n" + b'{"query": "solar'
    )
    head_only = b"POST /v1/rerank HTTP/1.1\r\nHost: x\r\nContent-Le"
    started = time.perf_counter()
    partial_body = [_open(strict.port, body_head) for _ in range(HALF_OPEN)]
    partial_head = [_open(strict.port, head_only) for _ in range(HALF_OPEN)]
    during = _health_ms(strict.url)  # while 400 connections hang
    answers = [_closed_by_server(s, 10.0) for s in partial_body]
    heads = [_closed_by_server(s, 10.0) for s in partial_head]
    took = time.perf_counter() - started
    for s in partial_body + partial_head:
        s.close()
    assert all(a is not None for a in answers + heads), "some connections were never closed"
    assert all(a.startswith(b"HTTP/1.1 408") for a in answers)  # told why, then closed
    assert took < 15  # closed at the 1 s timeouts, not held
    # /health while they hang: within a few times its unloaded latency (median of 10)
    assert during < max(10 * baseline, 50), (baseline, during)


def test_idle_keep_alive_connections_close(strict):
    s = _open(strict.port, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    time.sleep(0.2)
    first = s.recv(4096)
    assert first.startswith(b"HTTP/1.1 200")
    assert _closed_by_server(s, 5.0) is not None  # closed after keep_alive_seconds
    s.close()


def test_oversized_headers_are_refused(strict):
    big = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 40_000 + b"\r\n\r\n"
    s = _open(strict.port, big)
    answer = _closed_by_server(s, 5.0)
    s.close()
    assert answer is not None and answer.startswith(b"HTTP/1.1 431")


def _status_of(port: int) -> tuple[socket.socket, bytes]:
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    s.settimeout(10)
    return s, s.recv(4096).split(b"\r\n", 1)[0]


@pytest.mark.parametrize("limit", [1, 3])
def test_max_connections_serves_that_many_connections_at_once(live_server, limit):
    """uvicorn counts the connection being answered among those open, so `max_connections
    = 1` answered its first connection 503 (and N served N - 1): an operator who sized it
    to the balancer's connections lost one, and with 1 the service answered nothing."""
    settings = ServerSettings(pipelines={"bm25": "bm25"}, default="bm25", max_connections=limit)
    server = live_server(settings)
    held = []
    try:
        for _ in range(limit):
            s, status = _status_of(server.port)  # each stays open (keep-alive)
            held.append(s)
            assert status == b"HTTP/1.1 200 OK", status
        s, status = _status_of(server.port)  # one more than the limit
        held.append(s)
        assert status == b"HTTP/1.1 503 Service Unavailable", status
    finally:
        for s in held:
            s.close()
        server.stop()


def test_requests_refused_over_max_connections_are_counted_and_name_the_setting(
    live_server, monkeypatch, caplog
):
    """A request over `max_connections` got uvicorn's 503 and its line `Exceeded concurrency
    limit.`, which names no setting, and no metric counted it (it never reaches the app):
    the operator could not tell what to raise. Now /metrics counts them, and one WARNING
    a minute names `[server] max_connections`."""
    import logging

    from rerankit.server import connections

    monkeypatch.setattr(connections, "REFUSALS", connections.Refusals())  # said afresh
    settings = ServerSettings(pipelines={"bm25": "bm25"}, default="bm25", max_connections=2)
    server = live_server(settings)
    held = []
    try:
        uvicorn_said: list[str] = []  # uvicorn's own lines, heard where it logs them
        hear = logging.Handler(logging.WARNING)
        hear.emit = lambda record: uvicorn_said.append(record.getMessage())
        logging.getLogger("uvicorn.error").addHandler(hear)
        try:
            with caplog.at_level(logging.WARNING, logger="rerankit.server.connections"):
                for expected in (b"200 OK", b"200 OK", b"503", b"503", b"503"):
                    s, status = _status_of(server.port)
                    held.append(s)
                    assert expected in status, status
        finally:
            logging.getLogger("uvicorn.error").removeHandler(hear)
        lines = [r.getMessage() for r in caplog.records if r.name == connections.__name__]
        assert len(lines) == 1, lines  # once, not per request
        assert lines[0].startswith("1 request refused with 503"), lines[0]
        # and not uvicorn's line for each of the three as well (a flood under overload)
        assert "Exceeded concurrency limit." not in uvicorn_said, uvicorn_said
        assert "max_connections = 2 connections were open" in lines[0]
        assert "raise [server] max_connections" in lines[0]
        for s in held:  # frees the connections: /metrics can be asked
            s.close()
        held.clear()
        deadline = time.time() + 10
        while True:
            scrape = httpx.get(f"{server.url}/metrics")
            if scrape.status_code == 200 or time.time() > deadline:
                break
            time.sleep(0.05)
        assert "\nrerankit_connections_refused_total 3.0\n" in scrape.text, scrape.text[:300]
    finally:
        for s in held:
            s.close()
        server.stop()
