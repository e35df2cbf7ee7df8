"""One ``hybrid`` request's time alone, on a running service: what sizing ``[server]
timeout`` needs. Sends 300 short new texts twice, then the first 30 abstracts of
``examples/scifact-mini`` twice (new texts are embedded, texts seen before come from the
embedding cache), one request at a time, and prints each request's inference seconds from
its ``x-inference-time`` header.

Run against an idle replica, e.g. ``rerankit serve --model FOLDER --port 8080`` (the
exported bundled MiniLM, torch-free), then
``python -m benchmarks.speed.one_request [--url http://127.0.0.1:8080] [--key KEY]``.
"""

from __future__ import annotations

import argparse
import json
import time
import urllib.request
from pathlib import Path

QUERY = "how do vaccines train the immune system"
ABSTRACTS = Path(__file__).resolve().parents[2] / "examples" / "scifact-mini" / "corpus.jsonl"


def ask(url: str, docs: list[str], key: str | None) -> float:
    """One /v2/rerank request's inference seconds (``x-inference-time``)."""
    body = json.dumps({"model": "hybrid", "query": QUERY, "documents": docs}).encode()
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    req = urllib.request.Request(f"{url}/v2/rerank", body, headers)
    with urllib.request.urlopen(req, timeout=600) as answer:
        return float(answer.headers["x-inference-time"]) / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--key", default=None, help="an API key, when the service needs one")
    args = parser.parse_args()
    stamp = time.time()  # new texts on every run: none is in the cache yet
    short = [
        f"document {i} of a new set {stamp}: vaccines and the immune system" for i in range(300)
    ]
    lines = ABSTRACTS.read_text(encoding="utf-8").splitlines()
    abstracts = [json.loads(line)["text"] for line in lines if line.strip()][:30]
    print("| request | new texts s | the same again (cached) s |")
    print("|---|---:|---:|")
    for label, docs in (("300 short texts", short), ("30 SciFact abstracts", abstracts)):
        new, cached = ask(args.url, docs, args.key), ask(args.url, docs, args.key)
        print(f"| {label} | {new:.2f} | {cached:.3f} |")


if __name__ == "__main__":
    main()
