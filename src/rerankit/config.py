"""Declared pipelines: a reranker written as data (a dict, or a TOML, YAML or JSON file).

A spec is a list of ``stages`` (or a single stage's keys at the top level). A stage is one of

* ``reranker = "hybrid"``: a registered name (``rerankit rerankers`` lists them);
* ``scorer = {type = "bm25", k1 = 1.2}``: one scorer;
* ``scorers = [{type = "embedding", weight = 0.6}, {type = "bm25", weight = 0.4}]`` with
  optional ``method`` (a ScoreCombinationMethod, default ``weighted_average``),
  ``normalization`` (default ``min_max``) and ``rrf_k``: a fusion;
* ``rule = {type = "difficulty", mode = "learn"}``: an ordering rule (``difficulty``,
  ``mmr``, ``min_score``, ``deduplicate``);

plus optional ``name`` and ``keep`` (how many go on to the next stage). Scorer ``type``\\ s:
``bm25``, ``jaccard``, ``text``, ``field``, ``recency``, ``popularity``, ``embedding``,
``cross_encoder``, ``causal_lm``, ``llm_pointwise``, ``llm_listwise``; other keys are the
scorer's own keyword arguments. LLM scorers take ``provider`` (``gemini`` or ``openai``),
``model``, ``base_url`` and ``api_key_env`` (the environment variable holding the key).

Example (TOML)::

    name = "cascade"
    [[stages]]
    scorer = { type = "bm25" }
    keep = 30
    [[stages]]
    scorers = [{ type = "embedding", weight = 0.6 }, { type = "bm25", weight = 0.4 }]
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ._optional import require

__all__ = ["build_scorer", "load", "read_spec"]

_STAGE_KINDS = ("reranker", "scorer", "scorers", "rule")


def read_spec(source: str | Path) -> dict[str, Any]:
    """The spec in a ``.toml``, ``.yaml``/``.yml`` or ``.json`` file."""
    path = Path(source)
    if not path.exists():
        raise ValueError(f"pipeline file {str(path)!r} not found")
    text = path.read_text(encoding="utf-8")
    suffix = path.suffix.lower()
    try:
        if suffix == ".toml":
            try:
                import tomllib
            except ImportError:  # Python 3.10
                tomllib = require("tomli", "reading TOML pipelines")
            spec = tomllib.loads(text)
        elif suffix in (".yaml", ".yml"):
            spec = require("yaml", "reading YAML pipelines").safe_load(text)
        elif suffix == ".json":
            spec = json.loads(text)
        else:
            raise ValueError(f"{path}: use a .toml, .yaml, .yml or .json file")
    except (ValueError, TypeError) as exc:
        if str(exc).startswith(str(path)):
            raise
        raise ValueError(f"{path}: {exc}") from exc
    except Exception as exc:  # a parser's own error type (TOMLDecodeError, YAMLError)
        raise ValueError(f"{path}: {exc}") from exc
    if not isinstance(spec, Mapping):
        raise ValueError(f"{path}: a pipeline spec is a table/mapping at the top level")
    return dict(spec)


def _llm_client(options: dict[str, Any], where: str) -> Any:
    provider = options.pop("provider", "gemini")
    model = options.pop("model", None)
    base_url = options.pop("base_url", None)
    key_env = options.pop("api_key_env", None)
    key = os.environ.get(key_env) if key_env else None
    if key_env and not key:
        raise ValueError(f"{where}: environment variable {key_env!r} (api_key_env) is not set")
    if provider == "gemini":
        from .llm.gemini import DEFAULT_GEMINI_MODEL, GeminiClient

        return GeminiClient(key, model or DEFAULT_GEMINI_MODEL, base_url=base_url)
    if provider == "openai":
        from .llm.openai_client import DEFAULT_OPENAI_MODEL, OpenAIClient

        return OpenAIClient(key, model or DEFAULT_OPENAI_MODEL, base_url=base_url)
    raise ValueError(f"{where}: provider must be 'gemini' or 'openai', got {provider!r}")


def _scorer_factories() -> dict[str, Callable[..., Any]]:
    from .scorers import causal_lm, cross_encoder, embedding, field, lexical

    def llm(kind: str) -> Callable[..., Any]:
        def make(where: str = "", **options: Any) -> Any:
            from .scorers.llm_listwise import LLMListwiseScorer
            from .scorers.llm_pointwise import LLMPointwiseScorer

            client = _llm_client(options, where)
            cls = LLMPointwiseScorer if kind == "pointwise" else LLMListwiseScorer
            return cls(client, **options)

        return make

    return {
        "bm25": lexical.BM25Scorer,
        "jaccard": lexical.JaccardScorer,
        "text": lexical.TextSimilarity,
        "field": field.FieldScorer,
        "recency": field.RecencyScorer,
        "popularity": field.PopularityScorer,
        "embedding": embedding.EmbeddingScorer,
        "cross_encoder": cross_encoder.CrossEncoderScorer,
        "causal_lm": causal_lm.CausalLMScorer,
        "llm_pointwise": llm("pointwise"),
        "llm_listwise": llm("listwise"),
    }


def _rule_factories() -> dict[str, Callable[..., Any]]:
    from . import ordering

    def mmr(**options: Any) -> Any:
        if "lambda" in options:
            options["lambda_"] = options.pop("lambda")
        return ordering.MMR(**options)

    return {
        "difficulty": ordering.DifficultyOrdering,
        "mmr": mmr,
        "min_score": ordering.MinScore,
        "deduplicate": ordering.Deduplicate,
    }


def _typed(entry: Any, factories: dict[str, Callable[..., Any]], where: str) -> Any:
    if not isinstance(entry, Mapping) or "type" not in entry:
        raise ValueError(f"{where}: expected a table with a 'type' key, got {entry!r}")
    options = dict(entry)
    kind = options.pop("type")
    if kind not in factories:
        raise ValueError(f"{where}: unknown type {kind!r}; known: {', '.join(sorted(factories))}")
    factory = factories[kind]
    try:
        if kind.startswith("llm_"):
            return factory(where=where, **options)
        return factory(**options)
    except TypeError as exc:
        raise ValueError(f"{where} ({kind}): {exc}") from exc


def build_scorer(entry: Mapping[str, Any], where: str = "scorer") -> Any:
    """A scorer from ``{type = ..., ...}`` (``weight`` is not a scorer option)."""
    options = {k: v for k, v in entry.items() if k != "weight"}
    return _typed(options, _scorer_factories(), where)


def _stage(spec: Mapping[str, Any], where: str) -> tuple[Any, int | None, str | None]:
    from .fusion import ScoreCombinationMethod
    from .pipeline import FusionReranker, ScorerReranker, get_reranker

    kinds = [k for k in _STAGE_KINDS if k in spec]
    if len(kinds) != 1:
        raise ValueError(f"{where}: give exactly one of {', '.join(_STAGE_KINDS)}")
    allowed = {"name", "keep", kinds[0], "method", "normalization", "rrf_k"}
    unknown = sorted(set(spec) - allowed)
    if unknown:
        raise ValueError(f"{where}: unknown keys {unknown}")
    name, keep = spec.get("name"), spec.get("keep")
    kind = kinds[0]
    if kind == "reranker":
        step: Any = get_reranker(spec["reranker"])
    elif kind == "scorer":
        step = ScorerReranker(build_scorer(spec["scorer"], f"{where}.scorer"))
    elif kind == "rule":
        step = _typed(spec["rule"], _rule_factories(), f"{where}.rule")
    else:
        entries = spec["scorers"]
        if not isinstance(entries, list) or not entries:
            raise ValueError(f"{where}.scorers: a non-empty list of scorer tables")
        scorers = [build_scorer(e, f"{where}.scorers[{i}]") for i, e in enumerate(entries)]
        weights = None
        if any("weight" in e for e in entries):
            weights = {
                s.name: float(e.get("weight", 0.0)) for s, e in zip(scorers, entries, strict=True)
            }
        step = FusionReranker(
            scorers,
            ScoreCombinationMethod.parse(spec.get("method", "weighted_average")),
            weights,
            normalization_method=spec.get("normalization", "min_max"),
            rrf_k=float(spec.get("rrf_k", 60.0)),
            name=name or "fusion",
        )
    return step, keep, name


def load(spec: Any) -> Any:
    """A reranker from a spec (see the module doc): a mapping, a file path, a registered
    name, or a reranker or scorer (returned as a reranker). One plain stage gives that
    stage's reranker; anything more gives a Pipeline."""
    from .pipeline import _FACTORIES, Pipeline, Stage, get_reranker

    if not isinstance(spec, (str, Path, Mapping)):
        return get_reranker(spec)

    if isinstance(spec, (str, Path)):
        if isinstance(spec, str) and spec in _FACTORIES:
            return get_reranker(spec)
        spec = read_spec(spec)
    spec = dict(spec)
    name = spec.pop("name", None)
    if "stages" in spec:
        stages_spec = spec.pop("stages")
        if spec:
            raise ValueError(f"unknown top-level keys {sorted(spec)} (next to 'stages')")
    else:
        stages_spec = [spec]
    if not isinstance(stages_spec, list) or not stages_spec:
        raise ValueError("'stages' must be a non-empty list")
    stages = []
    for i, s in enumerate(stages_spec):
        if not isinstance(s, Mapping):
            raise ValueError(f"stages[{i}]: a stage is a table/mapping, got {s!r}")
        stages.append(_stage(s, f"stages[{i}]"))
    if len(stages) == 1 and stages[0][1] is None and not hasattr(stages[0][0], "decide"):
        step = stages[0][0]
        if name and "reranker" not in stages_spec[0]:  # never rename a shared built-in
            step.name = name
        return step
    return Pipeline(
        [Stage(step, keep, stage_name) for step, keep, stage_name in stages],
        name=name or "pipeline",
    )
