"""Learning from clicks through the real service path: ``rerankit serve`` with
``[server.feedback]`` on, simulated users over HTTP, then ``rerankit tune --clicks``; and
the same sessions learned from in memory. The two must agree exactly (the propensities and
the verdict): the service's log and feedback endpoint lose nothing learning needs.

Setting: SciFact's training queries, each with its BM25 top 100 and the default
``hybrid``'s scores of them (``benchmarks/quality/clicks_data.py``'s cache, read, not
recomputed; a query whose text an earlier one has is left out, since the service's log
groups sessions by query text), 10 sessions a query at eta 1, users of the position-based model
(``rerankit.training.clicks.simulate``; ULTRA's settings, SciFact's grade 1 as a 4). The
service serves one pipeline that orders the candidates by the hybrid's score (sent as a
field of each document, so the service shows the logging ranker's top 10 without running
the model again) and logs each answer (``store = "id"``). For each session the benchmark
sends the rerank request (Cohere v1, object documents with their ids and texts, top_n 10),
checks the order answered is the simulated one, and posts the simulated clicks to
``/v1/feedback`` by document id. Then ``rerankit tune --clicks LOG --features NPZ`` learns
(the features of the same cache, keyed by query text as the service's log groups them),
and ``learn_from_clicks`` learns from the simulated sessions in memory.

Run: ``python -m benchmarks.quality.clicks_service`` (``--queries N``: a seeded sample of
N training queries instead of all 809; ``--sessions``, ``--eta``, ``--seed``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.quality.clicks_data import prepared

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def simulate(data, rows, hybrid, sessions, eta, seed):
    """Each query's sessions over the hybrid's order, in memory: ``{query text: QueryLog}``
    (keyed as the service's log groups them: by the query text)."""
    from rerankit.training.clicks.simulate import (
        PositionBasedModel,
        grades_0_to_4,
        max_grade,
        simulate_query,
    )

    model = PositionBasedModel(eta=eta)
    rng = np.random.default_rng(seed)
    top = max_grade(data.qrels)
    return {
        data.queries[q]: simulate_query(
            model,
            key=data.queries[q],
            query=data.queries[q],
            doc_ids=ids,
            order=np.argsort(-np.asarray(hybrid[q]), kind="stable"),
            grades=grades_0_to_4(ids, data.qrels.get(q, {}), top),
            sessions=sessions,
            rng=rng,
            pipeline="served",
        )
        for q, (ids, _) in rows.items()
    }


def serve(folder: Path, port: int) -> subprocess.Popen:
    settings = folder / "serve.toml"
    settings.write_text(
        "[server]\nmax_documents = 200\ntimeout = 120.0\n\n"
        f'[server.feedback]\npath = "{folder / "clicks.jsonl"}"\nstore = "id"\n\n'
        '[pipelines.served]\nscorer = { type = "field", field = "hybrid", missing = 0.0 }\n'
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    argv = [sys.executable, "-m", "rerankit", "serve", "--settings", str(settings)]
    proc = subprocess.Popen(
        [*argv, "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(folder / "serve.log", "w"),  # noqa: SIM115
    )
    import httpx

    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/ready").status_code == 200:
                return proc
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)  # at once: SIGTERM waits out shutdown_delay
    raise SystemExit(f"rerankit serve did not start: {(folder / 'serve.log').read_text()}")


def replay(url, data, rows, hybrid, logs) -> tuple[int, int]:
    """Every session over HTTP: the rerank request, the order checked, the clicks posted.
    Returns (requests, feedback posted)."""
    import httpx

    requests = posted = 0
    with httpx.Client(base_url=url, timeout=120) as client:
        for q in rows:
            log = logs[data.queries[q]]
            ids = rows[q][0]
            docs = [
                {"id": d, "text": data.text(d), "hybrid": float(s)}
                for d, s in zip(ids, hybrid[q], strict=True)
            ]
            body = {"query": data.queries[q], "documents": docs, "top_n": 10}
            for s in range(log.sessions):
                answer = client.post("/v1/rerank", json={**body, "return_documents": False})
                answer.raise_for_status()
                answer = answer.json()
                requests += 1
                shown = [r["index"] for r in answer["results"]]
                expected = [int(i) for i in log.shown[s] if i >= 0]
                if shown != expected:
                    raise SystemExit(f"query {q}: the service showed {shown}, not {expected}")
                clicks = [ids[i] for i, c in zip(log.shown[s], log.clicked[s], strict=True) if c]
                if clicks:
                    sent = client.post("/v1/feedback", json={"id": answer["id"], "clicks": clicks})
                    sent.raise_for_status()
                    posted += 1
    return requests, posted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=None, help="a seeded sample (default all)")
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--eta", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from rerankit.training.clicks import learn_from_clicks, write_features

    data, rows, hybrid = prepared("scifact", "train")
    if args.queries is not None:
        keep = np.random.default_rng(args.seed).permutation(sorted(rows))[: args.queries]
        rows = {q: rows[q] for q in sorted(keep)}
    first: dict[str, str] = {}  # the log groups sessions by query text: one query per text
    for q in rows:
        first.setdefault(data.queries[q], q)
    shared = len(rows) - len(first)
    rows = {q: rows[q] for q in first.values()}
    logs = simulate(data, rows, hybrid, args.sessions, args.eta, args.seed)
    folder = Path(tempfile.mkdtemp(prefix="rerankit-clicks-service-"))
    port = _free_port()
    start = time.perf_counter()
    proc = serve(folder, port)
    try:
        requests, posted = replay(f"http://127.0.0.1:{port}", data, rows, hybrid, logs)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(30)
    served_seconds = time.perf_counter() - start
    print(
        f"SciFact train, {len(rows)} queries ({shared} left out: their text is another's), "
        f"{args.sessions} sessions a query, eta {args.eta}: "
        f"{requests} rerank requests and {posted} feedback posts over HTTP in "
        f"{served_seconds:.0f} s (every answer showed the simulated order)"
    )
    by_text = {data.queries[q]: rows[q] for q in rows}
    features = write_features(by_text, folder / "features.npz")
    out = folder / "learned.toml"
    argv = ["tune", "--clicks", str(folder / "clicks.jsonl"), "--features", str(features)]
    start = time.perf_counter()
    cli = subprocess.run(
        [sys.executable, "-m", "rerankit", *argv, "--out", str(out)],
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        capture_output=True,
        text=True,
        check=False,
    )
    if cli.returncode != 0:
        raise SystemExit(f"rerankit tune --clicks failed: {cli.stderr}")
    print(
        f"\n$ rerankit {' '.join(argv)} --out learned.toml  ({time.perf_counter() - start:.0f} s)"
    )
    print(cli.stdout.replace(str(folder) + "/", ""))
    from_service = json.loads(out.with_name("learned.propensities.json").read_text())
    start = time.perf_counter()
    memory = learn_from_clicks(logs, by_text)
    print(f"in memory ({time.perf_counter() - start:.0f} s): {memory.describe()}")
    served = np.array([np.nan if v is None else v for v in from_service["by_position"]])
    same_prop = np.allclose(served, memory.propensities.values, equal_nan=True, rtol=0, atol=1e-9)
    same_verdict = f"verdict: {memory.describe()}" in cli.stdout
    curve = [f"{100 * m:.2f}" for _, m in memory.curve]
    same_curve = all(c in cli.stdout for c in curve)
    print(
        f"\nthe service path and memory agree: propensities {same_prop}, verdict {same_verdict}, "
        f"learning curve {same_curve}"
    )
    if not (same_prop and same_verdict and same_curve):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
