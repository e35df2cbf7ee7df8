"""The metrics table of docs/service.md is what ``/metrics`` exports: a live service with
every feature that has metrics turned on (two pipelines, one that cannot load, the answer
cache, the click log) answers a few requests, and its scrape must hold exactly the table's
metrics, each with the table's type and labels. And what the metrics count: every request
to a rerank endpoint, an invalid one included; latency, queue and slots by pipeline; and
the standard process and version series, of the process that answers the scrape."""

from __future__ import annotations

import importlib.util
import platform
import re
import time
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx", reason="needs the 'server' extra")
pytest.importorskip("fastapi", reason="needs the 'server' extra")
parser = pytest.importorskip("prometheus_client.parser", reason="needs the 'server' extra")

from rerankit import __version__, register_reranker  # noqa: E402
from rerankit.errors import ModelLoadError  # noqa: E402
from rerankit.rerankers import ScorerReranker  # noqa: E402
from rerankit.scorers import FunctionScorer  # noqa: E402
from rerankit.server import ServerSettings  # noqa: E402

PAGE = Path(__file__).resolve().parents[2] / "docs" / "service.md"
#: the process series come from /proc (Linux); elsewhere they are absent
PROC = Path("/proc/self/stat").exists()
ASK = {"query": "solar power", "documents": ["solar panels", "wind at sea", "solar cells"]}


def _no_model(q, d):
    raise ModelLoadError("could not load model 'org/none': not there")


register_reranker("test-no-model", lambda: ScorerReranker(FunctionScorer(_no_model)))


def _table() -> dict[str, tuple[str, set[str]]]:
    """The page's metrics table: name -> (type, labels)."""
    text = PAGE.read_text(encoding="utf-8")
    section = text[text.index("### Metrics") :]
    rows = re.findall(
        r"^\| `((?:rerankit|process|python)_\w+)` \| (\w+) \|([^|]*)\|", section, flags=re.M
    )
    assert len(rows) >= 20, "the metrics table was not found"
    table = {name: (kind, set(re.findall(r"`(\w+)`", labels))) for name, kind, labels in rows}
    return {name: got for name, got in table.items() if PROC or not name.startswith("process_")}


def _scraped(text: str) -> dict[str, tuple[str, set[str], list]]:
    """The scrape: sample-style name (``..._total`` for a counter) -> (type, labels of its
    samples, the samples)."""
    out = {}
    for family in parser.text_string_to_metric_families(text):
        name = family.name + ("_total" if family.type == "counter" else "")
        labels = {k for s in family.samples for k in s.labels if k not in ("le", "quantile")}
        out[name] = (family.type, labels, family.samples)
    return out


def _value(samples: list, name: str, **labels: str) -> float:
    return sum(
        s.value
        for s in samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    )


@pytest.fixture(scope="module")
def scrape(live_server, tmp_path_factory):
    folder = tmp_path_factory.mktemp("metrics")
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(folder / "cache"))  # the answer cache's file
    settings = ServerSettings(
        pipelines={
            "bm25": "bm25",
            "missing": "test-no-model",
        },
        default="bm25",
        ready_when="any",
        answer_cache=True,
        feedback={"path": str(folder / "clicks.jsonl"), "store": "hash"},
    )
    server = live_server(settings)
    try:
        url = server.url
        first = httpx.post(f"{url}/v2/rerank", json=ASK)
        assert first.status_code == 200 and first.headers["x-rerankit-cache"] == "miss"
        hit = httpx.post(f"{url}/v2/rerank", json=ASK)
        assert hit.headers["x-rerankit-cache"] == "hit"
        assert httpx.post(f"{url}/v2/rerank", json={"query": "q"}).status_code == 422
        unknown = httpx.post(f"{url}/v2/rerank", json={**ASK, "model": "made-up-name"})
        assert unknown.status_code == 404
        broken = httpx.post(f"{url}/v2/rerank", json={**ASK, "model": "missing"})
        assert broken.status_code == 503
        assert httpx.post(f"{url}/v1/explain", json=ASK).status_code == 200
        feedback = {"id": first.json()["id"], "clicks": [0]}
        assert httpx.post(f"{url}/v1/feedback", json=feedback).status_code == 200
        assert httpx.get(f"{url}/no/such/path").status_code == 404
        assert httpx.get(f"{url}/ready", params={"model": "missing"}).status_code == 503
        yield _scraped(httpx.get(f"{url}/metrics").text)
    finally:
        server.stop()
        monkeypatch.undo()


def test_the_pages_metrics_table_is_what_the_service_exports(scrape):
    table = _table()
    # the `X_created` gauges that come with each counter and histogram (the page says so)
    created = {name for name in scrape if name.endswith("_created")}
    for name in created:
        base = name.removesuffix("_created")
        assert {base, f"{base}_total"} & set(table), f"{name}: of no metric in the table"
        assert table.get(base, table.get(f"{base}_total"))[0] in ("counter", "histogram")
    scrape = {name: got for name, got in scrape.items() if name not in created}
    assert sorted(table) == sorted(scrape), "the table and the scrape name different metrics"
    for name, (kind, labels) in table.items():
        got_kind, got_labels, samples = scrape[name]
        assert kind == got_kind, f"{name}: the table says {kind}, the scrape {got_kind}"
        assert samples, f"{name}: no sample to read its labels from"
        assert labels == got_labels, f"{name}: labels {sorted(labels)} != {sorted(got_labels)}"


def test_every_rerank_request_is_counted_and_timed_by_pipeline(scrape):
    _, _, requests = scrape["rerankit_requests_total"]
    total = "rerankit_requests_total"
    # 200, 200 (a hit), 422 (counted under no pipeline), 404 (a made-up name: no series of
    # its own), 503 (a pipeline that failed)
    assert _value(requests, total, endpoint="/v2/rerank", model="bm25") == 2
    assert _value(requests, total, endpoint="/v2/rerank", model="") == 2
    assert _value(requests, total, endpoint="/v2/rerank", model="missing") == 1
    assert _value(requests, total, endpoint="/v1/explain", model="bm25") == 1
    assert _value(requests, total) == 6  # not /v1/feedback, probes or the unknown path
    _, _, errors = scrape["rerankit_errors_total"]
    assert _value(errors, "rerankit_errors_total", status="422", model="") == 1
    assert _value(errors, "rerankit_errors_total", status="404", model="") == 2  # + the path
    assert _value(errors, "rerankit_errors_total", status="503", model="missing") == 1
    assert not any("made-up-name" in str(s.labels) for s in errors + requests)
    _, _, latency = scrape["rerankit_request_seconds"]
    count = "rerankit_request_seconds_count"
    assert _value(latency, count, endpoint="/v2/rerank", model="bm25") == 2
    assert _value(latency, count, endpoint="unmatched") == 1
    buckets = {float(s.labels["le"]) for s in latency if s.name.endswith("_bucket")}
    assert {30.0, 60.0} <= buckets  # past the default 30 s deadline
    _, _, queued = scrape["rerankit_queue_seconds"]
    assert _value(queued, "rerankit_queue_seconds_count", model="bm25") == 2  # miss, explain
    _, _, slots = scrape["rerankit_in_flight"]
    assert {s.labels["model"] for s in slots} == {"bm25", "missing"}  # every pipeline, at 0
    _, _, ready = scrape["rerankit_pipeline_ready"]
    assert _value(ready, "rerankit_pipeline_ready", model="bm25") == 1
    assert _value(ready, "rerankit_pipeline_ready", model="missing") == 0


def _one(scrape, name: str):
    (sample,) = scrape[name][2]
    return sample


def test_the_version_and_process_series_describe_the_process_that_answers(scrape):
    build = _one(scrape, "rerankit_build_info")
    assert build.value == 1
    assert build.labels["version"] == __version__
    assert build.labels["python"] == platform.python_version()
    runtimes = {"onnx": ("onnxruntime", "tokenizers"), "torch": ("torch", "sentence_transformers")}
    installed = [k for k, needs in runtimes.items() if all(map(importlib.util.find_spec, needs))]
    assert build.labels["backends"] == ",".join(installed)
    assert _one(scrape, "python_info").labels["version"] == platform.python_version()
    if not PROC:
        pytest.skip("the process series are read from /proc")
    # the live server is a thread of this process: the series are this process's
    cpu = _one(scrape, "process_cpu_seconds_total").value
    assert 0 < cpu <= time.process_time() + 0.02  # (scraped earlier; /proc counts in ticks)
    assert _one(scrape, "process_resident_memory_bytes").value > 10e6
    assert _one(scrape, "process_start_time_seconds").value < time.time()
    assert 3 <= _one(scrape, "process_open_fds").value <= _one(scrape, "process_max_fds").value
