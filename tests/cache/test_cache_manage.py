"""`cache_info` and `clear_cache`: what `rerankit cache` shows and clears, from Python (real
SQLite files, folders and a real Redis server), with nothing printed."""

from __future__ import annotations

import importlib.util
import json
import logging

import numpy as np
import pytest

from rerankit.cache import (
    CACHE_NAMES,
    AnswerCache,
    CacheInfo,
    ClearedCache,
    EmbeddingCache,
    JudgmentCache,
    cache_info,
    clear_cache,
)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """An empty rerankit cache directory, no shared server named by the environment."""
    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("RERANKIT_EMBEDDING_CACHE", raising=False)
    monkeypatch.delenv("RERANKIT_CACHE_URL", raising=False)
    return tmp_path


def fill(folder):
    """Two vectors, one judgment, one ONNX export and two word-frequency tables."""
    vectors = EmbeddingCache(path=folder / "embeddings.sqlite")
    vectors.put_many("m", ["a", "b"], np.ones((2, 4), dtype=np.float32))
    JudgmentCache(folder / "judgments.sqlite").put_many([("k", 1.0)])
    export = folder / "onnx" / "all-MiniLM-L6-v2-abc"
    export.mkdir(parents=True)
    (export / "rerankit_onnx.json").write_text(json.dumps({"source": "all-MiniLM-L6-v2"}))
    (export / "model.onnx").write_bytes(b"0" * 2000)
    (folder / "wordfreq").mkdir()
    for language in ("en", "de"):
        (folder / "wordfreq" / f"{language}-large-abc-v1.npz").write_bytes(b"1" * 500)


def without_torch(monkeypatch):
    real = importlib.util.find_spec  # as `pip install rerankit[onnx]`
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a)
    )


def test_info_finds_every_cache_where_it_is_with_its_entries_and_size(cache_dir, capsys):
    empty = cache_info()
    assert [c.name for c in empty] == list(CACHE_NAMES)
    assert not any(c.found for c in empty)
    assert empty[1] == CacheInfo(
        "judgments", str(cache_dir / "judgments.sqlite"), "LLM judgments", found=False
    )
    fill(cache_dir)
    found = {c.name: c for c in cache_info()}
    embeddings, judgments, answers = found["embeddings"], found["judgments"], found["answers"]
    assert (embeddings.entries, judgments.entries) == (2, 1)
    assert embeddings.where == str(cache_dir / "embeddings.sqlite") and embeddings.bytes > 0
    assert not embeddings.estimated and embeddings.server == ()
    assert not answers.found  # no file yet
    onnx, wordfreq = found["onnx"], found["wordfreq"]
    manifest = cache_dir / "onnx" / "all-MiniLM-L6-v2-abc" / "rerankit_onnx.json"
    size = 2000 + manifest.stat().st_size
    assert (onnx.entries, onnx.items, onnx.bytes) == (1, ("all-MiniLM-L6-v2",), size)
    assert (wordfreq.entries, wordfreq.items, wordfreq.bytes) == (2, ("de", "en"), 1000)
    assert [c.name for c in cache_info(which="judgment")] == ["judgments"]  # singular too
    assert capsys.readouterr() == ("", "")  # a library call says nothing


def test_info_reads_the_embedding_file_the_environment_names(cache_dir, monkeypatch):
    mine = cache_dir / "elsewhere" / "vectors.sqlite"
    mine.parent.mkdir()
    EmbeddingCache(path=mine).put_many("m", ["a"], np.ones((1, 4), dtype=np.float32))
    monkeypatch.setenv("RERANKIT_EMBEDDING_CACHE", str(mine))
    (embeddings,) = cache_info(which="embeddings")
    assert (embeddings.where, embeddings.entries) == (str(mine), 1)
    assert clear_cache("embeddings") == [ClearedCache("embeddings", str(mine), entries=1)]


def test_clear_empties_the_cache_named_and_leaves_the_others(cache_dir, caplog, capsys):
    fill(cache_dir)
    judgments = JudgmentCache(cache_dir / "judgments.sqlite")
    with caplog.at_level(logging.INFO, logger="rerankit.cache.manage"):
        done = clear_cache("judgment")
    assert done == [ClearedCache("judgments", str(cache_dir / "judgments.sqlite"), entries=1)]
    assert done[0].cleared and len(judgments) == 0
    assert "cleared judgments" in caplog.text and capsys.readouterr() == ("", "")
    assert {c.name: c.entries for c in cache_info()}["embeddings"] == 2  # untouched
    (onnx,) = clear_cache("onnx")
    assert onnx == ClearedCache("onnx", str(cache_dir / "onnx")) and onnx.entries is None
    assert not (cache_dir / "onnx").exists() and (cache_dir / "wordfreq").exists()


def test_clear_all_keeps_the_onnx_exports_an_install_without_torch_cannot_remake(
    cache_dir, monkeypatch
):
    fill(cache_dir)
    without_torch(monkeypatch)
    done = {c.name: c for c in clear_cache()}
    assert set(done) == {"embeddings", "judgments", "onnx", "wordfreq"}  # no answers file
    assert (done["embeddings"].entries, done["judgments"].entries) == (2, 1)
    assert done["onnx"].kept == "cannot-export" and not done["onnx"].cleared
    assert (cache_dir / "onnx").exists() and not (cache_dir / "wordfreq").exists()
    assert clear_cache("onnx")[0].cleared and not (cache_dir / "onnx").exists()  # named: gone


def test_a_server_is_seen_and_cleared_under_its_namespace_leaving_this_machines_folders(
    cache_dir, redis_url, redis_server
):
    fill(cache_dir)
    JudgmentCache(url=redis_url).put_many([("a", 1), ("b", 2)])
    AnswerCache(url=redis_url, namespace="v7").put("fp:-:x", b"v7's")
    found = {c.name: c for c in cache_info(url=redis_url)}
    judgments = found["judgments"]
    assert judgments.entries == 2 and judgments.where == f"{redis_url} (rerankit:judgment:*)"
    assert judgments.estimated and any("policy noeviction" in n for n in judgments.server)
    assert found["answers"].entries == 0 and found["onnx"].entries == 1  # folders too
    (answers,) = cache_info(url=redis_url, namespace="v7", which="answers")
    assert answers.entries == 1
    done = {c.name: c for c in clear_cache(url=redis_url)}
    assert done["judgments"].entries == 2 and done["answers"].entries == 0
    assert (done["onnx"].kept, done["wordfreq"].kept) == ("local", "local")
    assert (cache_dir / "onnx").exists() and (cache_dir / "wordfreq").exists()
    assert {k.decode() for k in redis_server.client().keys("*")} == {"v7:answer:fp:-:x"}


def test_a_name_no_cache_has_or_a_namespace_without_a_server_is_refused(cache_dir, redis_url):
    with pytest.raises(ValueError, match="which must be all or one of embeddings, judgments"):
        cache_info(which="vectors")
    with pytest.raises(ValueError, match="namespace has no effect without a server"):
        clear_cache(namespace="v7")
    with pytest.raises(ValueError, match="not both"):
        clear_cache(url=redis_url + "?namespace=v7", namespace="v8")
