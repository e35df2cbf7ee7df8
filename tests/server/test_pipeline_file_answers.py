"""A pipeline served from a file (``reranker = "fused.toml"``) keys its answers by what the
file says, not where it is: a replica restarted after the file was edited in place never
serves, nor is served, the old pipeline's answers from the shared cache, while two copies of
one file in two folders share theirs (an SRE running three replicas on one Redis saw the
old and the new weights answer for each other after one replica was restarted)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="needs the 'server' extra")

from fastapi.testclient import TestClient

from rerankit.server import ServerSettings, create_app

DOCS = ["solar panels on the roof", "solar solar solar", "wind farms at sea", "panels"]


def _pipeline(folder: Path, bm25: float, jaccard: float) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "fused.toml").write_text(
        f'scorers = [{{ type = "bm25", weight = {bm25} }}, '
        f'{{ type = "jaccard", weight = {jaccard} }}]\n',
        encoding="utf-8",
    )
    settings = folder / "service.toml"
    settings.write_text(
        '[server]\nanswer_cache = true\n[pipelines.fused]\nreranker = "fused.toml"\n',
        encoding="utf-8",
    )
    return settings


def _ask(settings: Path, wait_ready) -> tuple[str, list[float]]:
    """One replica's answer to the same question: started from ``settings``, as a restart."""
    with TestClient(create_app(ServerSettings.from_file(settings))) as client:
        wait_ready(client)
        body = {"model": "fused", "query": "solar panels", "documents": DOCS}
        answer = client.post("/v2/rerank", json=body)
        assert answer.status_code == 200, answer.text
    scores = [round(r["relevance_score"], 6) for r in answer.json()["results"]]
    return answer.headers["x-rerankit-cache"], scores


def test_a_pipeline_file_edited_in_place_gets_new_answer_keys(tmp_path, monkeypatch, wait_ready):
    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path / "cache"))  # answers.sqlite: shared
    settings = _pipeline(tmp_path / "a", bm25=0.9, jaccard=0.1)
    source, old = _ask(settings, wait_ready)
    assert source == "miss"
    assert _ask(settings, wait_ready) == ("hit", old)  # the same file: its answers
    _pipeline(tmp_path / "a", bm25=0.1, jaccard=0.9)  # the weights edited in place
    source, new = _ask(settings, wait_ready)
    assert source == "miss" and new != old  # computed by the new pipeline, not the old's
    # the same file copied to another folder (another replica's layout): the same answers
    assert _ask(_pipeline(tmp_path / "b", bm25=0.1, jaccard=0.9), wait_ready) == ("hit", new)


def test_a_file_edited_while_the_service_starts_keys_answers_by_what_was_built(
    tmp_path, monkeypatch, wait_ready
):
    """The pipeline is built at start and its fingerprint taken once it has loaded: a file
    edited in between must not key the old pipeline's answers by the new file's contents
    (another replica started from the new file would then serve them)."""
    from rerankit import load
    from rerankit.cache import pipeline_fingerprint

    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path / "cache"))
    settings = _pipeline(tmp_path / "a", bm25=0.9, jaccard=0.1)
    app = create_app(ServerSettings.from_file(settings))  # built here: the old weights
    _pipeline(tmp_path / "a", bm25=0.1, jaccard=0.9)  # edited before it loads
    old = {"reranker": str(_pipeline(tmp_path / "old", 0.9, 0.1).parent / "fused.toml")}
    new = {"reranker": str(tmp_path / "a" / "fused.toml")}
    with TestClient(app) as client:
        wait_ready(client)
        served = app.state.service.pipelines["fused"]
    assert served.reranker.weights == {"bm25": 0.9, "jaccard": 0.1}  # as built at start
    assert served.fingerprint == pipeline_fingerprint(old, load(old))
    assert served.fingerprint != pipeline_fingerprint(new, load(new))
