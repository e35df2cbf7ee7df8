"""``rank --embedding-cache FILE`` and ``--no-embedding-cache``, as batch reads them: no
embeddings kept unless asked, FILE keeps them, --no-embedding-cache ignores
$RERANKIT_EMBEDDING_CACHE, both at once is a usage error."""

from __future__ import annotations

import json
import sqlite3

import pytest

from rerankit.cache import EMBEDDING_CACHE_ENV
from rerankit.cli import main

DOCS = [{"id": "a", "text": "Paris is the capital of France"}, {"id": "b", "text": "bread"}]


def stored(path) -> int:
    with sqlite3.connect(path) as db:
        tables = [t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return sum(db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in tables)


@pytest.mark.slow  # about 10 s: the bundled embedding model
def test_rank_keeps_embeddings_in_the_file_asked_for_and_none_with_no_embedding_cache(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.delenv(EMBEDDING_CACHE_ENV, raising=False)  # put back after the test
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    rank = ["rank", "-q", "capital of France", "-i", str(docs), "-r", "embedding"]
    kept, elsewhere = tmp_path / "vectors.sqlite", tmp_path / "env.sqlite"
    assert main([*rank, "--embedding-cache", str(kept)]) == 0
    first = [json.loads(line)["id"] for line in capsys.readouterr().out.splitlines()]
    assert first[0] == "a" and stored(kept) >= 2  # the two documents
    monkeypatch.setenv(EMBEDDING_CACHE_ENV, str(elsewhere))
    assert main([*rank, "--no-embedding-cache"]) == 0
    assert not elsewhere.exists()
    capsys.readouterr()
    assert main([*rank, "--embedding-cache", "f.sqlite", "--no-embedding-cache"]) == 2
    assert "with --no-embedding-cache" in capsys.readouterr().err


def test_rank_help_words_the_embedding_cache_as_batch_does(capsys):
    with pytest.raises(SystemExit):
        main(["rank", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--embedding-cache FILE SQLite file keeping document embeddings across runs" in text
    assert "--no-embedding-cache keep no embeddings, even where $RERANKIT_EMBEDDING_CACHE" in text
