"""What every request passes through, seen from outside: a crash anywhere in the app is a
JSON 500 counted once; refusals come before any work, with their reasons and headers."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi", reason="needs the 'server' extra")

from fastapi.testclient import TestClient

from rerankit.server import ServerSettings, create_app

KEY = {"Authorization": "Bearer k"}


def _errors(client: TestClient, status: int) -> float:
    for line in client.get("/metrics").text.splitlines():
        if line.startswith("rerankit_errors_total{") and f'status="{status}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


@pytest.fixture
def client(monkeypatch, wait_ready):
    monkeypatch.delenv("RERANKIT_API_KEYS", raising=False)
    app = create_app(
        ServerSettings(
            pipelines={"bm25": "bm25"},
            default="bm25",
            aliases={},
            api_keys=["k"],
            max_body_bytes=50_000,
        )
    )

    async def crash() -> None:
        raise RuntimeError("boom")

    async def busy() -> None:
        from rerankit.errors import ServiceError

        raise ServiceError(503, "busy")  # no Retry-After of its own

    app.add_api_route("/crash", crash)
    app.add_api_route("/busy", busy)
    with TestClient(app, raise_server_exceptions=False) as c:
        wait_ready(c)  # 503 until the pipeline has loaded
        yield c


def test_a_crash_is_a_json_500_counted_once(client):
    before = _errors(client, 500)
    r = client.get("/crash", headers=KEY)
    assert r.status_code == 500
    assert r.json() == {"message": "internal error", "code": "internal_error"}
    assert _errors(client, 500) == before + 1


def test_refusals_say_why_and_when_to_come_back(client):
    assert client.get("/crash").status_code == 401  # no key: refused before the route runs
    r = client.get("/crash", headers={"Authorization": "Bearer wrong"})
    assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")
    assert client.get("/health").status_code == 200  # open paths need no key
    r = client.get("/busy", headers=KEY)
    assert r.status_code == 503 and r.headers["retry-after"] == "1"
    body = {"query": "q", "documents": ["x" * 5000] * 20}
    r = client.post("/v2/rerank", headers=KEY, json=body)
    assert r.status_code == 413 and "bytes" in r.json()["message"]
    assert "(max_body_bytes in the service's settings)" in r.json()["message"]  # the setting
    chunks = iter([b'{"query": "q", "documents": ["', b"x" * 60_000, b'"]}'])  # no length
    r = client.post(
        "/v2/rerank", headers={**KEY, "content-type": "application/json"}, content=chunks
    )
    assert r.status_code == 413  # counted as it streams, said the same way
    assert "(max_body_bytes in the service's settings)" in r.json()["message"]
    r = client.get("/health", headers={"x-long": "y" * 70_000})
    assert r.status_code == 431
    assert "(max_header_bytes in the service's settings)" in r.json()["message"]
    r = client.post("/v2/rerank", headers=KEY, json={"query": "vaccines", "documents": ["a", "b"]})
    assert r.status_code == 200 and len(r.json()["results"]) == 2
