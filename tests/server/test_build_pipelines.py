"""``build_pipelines(settings)``: a settings file's pipelines built from Python as the
service builds them, within its ``[cache]`` defaults (``rerankit precompute --settings``
and ``rerankit check`` build them so too)."""

from __future__ import annotations

import pytest

from rerankit import register_reranker, registry
from rerankit.cache import CacheSettings, current_defaults
from rerankit.errors import ConfigError
from rerankit.rerankers.base import Reranker
from rerankit.scorers import BM25Scorer
from rerankit.server import ServerSettings, build_pipeline, build_pipelines
from rerankit.types import RerankResult


class _Recorder(Reranker):
    """A reranker that keeps the cache defaults in force when it was built."""

    name = "recorder"
    score_scale = "relative"

    def __init__(self, **options) -> None:
        self.defaults = current_defaults()

    async def arerank(self, query, documents, top_k=None, **kwargs):
        return RerankResult(query)

    async def _rank(self, query, docs, **kwargs):  # (arerank above answers)
        raise NotImplementedError


@pytest.fixture
def recorder(monkeypatch):
    monkeypatch.setattr(registry, "_ENTRIES", dict(registry._ENTRIES))
    register_reranker("recorder", _Recorder)


def test_each_pipeline_is_built_by_name_within_the_cache_table(recorder):
    table = {"namespace": "svc", "judgment_ttl": 60}
    settings = ServerSettings(
        pipelines={"mine": "recorder", "lexical": "bm25"}, default="mine", cache=table
    )
    built = build_pipelines(settings)
    assert list(built) == ["mine", "lexical"]
    assert (
        built["mine"].defaults == settings.cache == CacheSettings(namespace="svc", judgment_ttl=60)
    )
    assert any(isinstance(s, BM25Scorer) for s in built["lexical"].scorers())
    assert current_defaults() is None  # only while building
    assert build_pipeline("recorder", settings).defaults is settings.cache


def test_only_the_pipelines_the_settings_serve_are_built():
    assert set(build_pipelines(ServerSettings(pipelines={"bm25": "bm25"}, default="bm25"))) == {
        "bm25"
    }


def test_a_spec_that_cannot_be_built_raises_as_load_does(recorder):
    with pytest.raises(ConfigError, match="nonesuch"):
        build_pipeline({"scorer": {"type": "nonesuch"}}, ServerSettings())
