"""How long a request whose client left keeps its slot, on a running service: what the next
request waits. Sends the first 30 abstracts of ``examples/scifact-mini`` (new texts) once
to the end, for the request's time alone, then, several times, sends them again (new
again), closes the connection after ``--abort-ms``, and at once sends a request of two
short texts: its ``x-queue-time`` is how long the abandoned work held the one slot after
its client left (its model work stops before its next inner batch, so at most about one
batch), its ``x-inference-time`` how long the model thread took for it after that.

Run against an idle replica with one slot, e.g. ``rerankit serve --port 8080 --settings
one_slot.toml`` (``[server] max_concurrency = 1``), then
``python -m benchmarks.speed.abandoned [--url http://127.0.0.1:8080] [--key KEY]``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import socket
import time
import urllib.parse
import urllib.request
from pathlib import Path

QUERY = "how do vaccines train the immune system"
ABSTRACTS = Path(__file__).resolve().parents[2] / "examples" / "scifact-mini" / "corpus.jsonl"


def _body(docs: list[str]) -> bytes:
    return json.dumps({"model": "hybrid", "query": QUERY, "documents": docs}).encode()


def _headers(key: str | None) -> dict[str, str]:
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return headers


def ask(url: str, docs: list[str], key: str | None) -> tuple[float, float]:
    """One /v2/rerank request's queue and inference seconds (``x-queue-time``,
    ``x-inference-time``)."""
    req = urllib.request.Request(f"{url}/v2/rerank", _body(docs), _headers(key))
    with urllib.request.urlopen(req, timeout=600) as answer:
        return (
            float(answer.headers["x-queue-time"]) / 1000,
            float(answer.headers["x-inference-time"]) / 1000,
        )


def abandon(url: str, docs: list[str], key: str | None, after: float) -> None:
    """Send a /v2/rerank request of ``docs`` and close the connection ``after`` seconds."""
    where = urllib.parse.urlsplit(url)
    body = _body(docs)
    head = "".join(f"{k}: {v}\r\n" for k, v in _headers(key).items())
    request = (
        f"POST /v2/rerank HTTP/1.1\r\nHost: {where.hostname}\r\n{head}"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    with socket.create_connection((where.hostname, where.port or 80)) as conn:
        conn.sendall(request)
        time.sleep(after)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--key", default=None, help="an API key, when the service needs one")
    parser.add_argument("--abort-ms", type=float, default=300.0)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with ABSTRACTS.open(encoding="utf-8") as lines:
        abstracts = [json.loads(line)["text"] for line in itertools.islice(lines, 30)]
    stamp = time.time()  # new texts on every request: none is in the embedding cache

    def new(n: int) -> list[str]:
        return [f"{text} ({stamp} {n})" for text in abstracts]

    _, alone = ask(args.url, new(0), args.key)
    print(f"30 abstracts to the end: {alone:.2f} s of inference")
    for run in range(1, args.runs + 1):
        abandon(args.url, new(run), args.key, args.abort_ms / 1000)
        queue, inference = ask(args.url, [f"short {stamp} {run}", "text"], args.key)
        print(
            f"left after {args.abort_ms:.0f} ms: the next request waited {queue:.2f} s for "
            f"the slot, then {inference:.2f} s"
        )
        time.sleep(1.0)  # (whatever is left of the abandoned work ends before the next run)


if __name__ == "__main__":
    main()
