"""Declared pipelines: a reranker written as data (a dict, or a TOML, YAML or JSON file).

A spec is a list of ``stages`` (or a single stage's keys at the top level). A stage is one of

* ``reranker = "hybrid"``: a registered name (``rerankit rerankers`` lists them), or
  ``reranker = { type = "hybrid", backend = "onnx", quantize = "int8" }`` with options
  (the hybrid's ``model`` is a hub id, a model folder or a folder written by
  ``rerankit export``; its ``embedding`` may be a scorer table of its own,
  ``{ type = "embedding", model = "...", backend = "onnx" }``);
* ``scorer = {type = "bm25", k1 = 1.2}``: one scorer;
* ``scorers = [{type = "embedding", weight = 0.6}, {type = "bm25", weight = 0.4}]`` with
  optional ``method`` (a ScoreCombinationMethod, default ``weighted_average``),
  ``normalization`` (default ``min_max``) and ``rrf_k``: a fusion (every scorer has a
  ``weight``, or none has and the weights are equal). With
  ``normalization = "calibrated"`` each scorer table also has
  ``calibration = {slope = ..., intercept = ...}`` and the stage may have
  ``output_calibration``: the fused score is then an estimate of P(relevant) that depends
  only on the query and the document (see :mod:`rerankit.calibration`);
* ``rule = {type = "mmr", lambda = 0.7}``: an ordering rule (``difficulty``, ``mmr``,
  ``min_score``, ``deduplicate``);

plus optional ``name``, ``keep`` (how many go on to the next stage) and ``max_demotion``
(how many places below its place in the previous stage's order a document may end).
Scorer ``type``\\ s are the registered scorers (``bm25``, ``jaccard``, ``text``, ``field``,
``recency``, ``popularity``, ``graph``, ``embedding``, ``cross_encoder``, ``causal_lm``,
``llm_pointwise``, ``llm_listwise``, ...); other keys are the scorer's own keyword
arguments (``lambda`` for MMR's ``lambda_``). LLM scorers take ``provider`` (``gemini`` or
``openai``), ``model``, ``base_url``, ``api_key_env`` (the environment variable holding
the key), the client's own keys (``json_mode`` for ``openai``), and ``retry`` as a table
(``retry = { attempts = 5, timeout = 30 }``, made a :class:`~rerankit.llm.RetryPolicy`).

In a pipeline file, a relative ``model`` or ``embedding`` path that exists beside the file
(``model = "ltr.lgb.txt"``) is read from the file's folder, so a pipeline and its model copied
together to another folder or machine still load; anything else (a hub id, a path relative
to the working directory) is used as written.

Mistakes raise :class:`~rerankit.errors.ConfigError` naming the stage and key
(``stages[1].keep: must be a positive integer``); an unknown key is named with the valid
ones, or with the file's spelling of a Python one (``combination_method``: ``method``).

Example (TOML)::

    name = "cascade"
    [[stages]]
    scorer = { type = "bm25" }
    keep = 30
    [[stages]]
    scorers = [{ type = "embedding", weight = 0.6 }, { type = "bm25", weight = 0.4 }]
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from numbers import Real
from pathlib import Path
from typing import Any

from . import registry
from ._once import BuiltOnce
from .backends.detect import model_kind
from .cache import current_defaults
from .errors import ConfigError, in_file, strip_location
from .fusion import ScoreCombinationMethod
from .llm.base import KEYS_OPTIONAL
from .llm.declared import split_llm_options
from .normalize import check_normalization_method
from .options import (
    FILE_SPELLINGS,
    check_options,
    missing_options,
    stage_spellings,
    unknown_keys,
)
from .ordering import Rule
from .plugins import load_plugins, plugin_list
from .rerankers import FusionReranker, Pipeline, Reranker, ScorerReranker, Stage
from .rerankers.placement import check_max_demotion
from .scorers.base import Scorer, check_scorer
from .scorers.llm_listwise import LLMListwiseScorer
from .scorers.llm_pointwise import LLMPointwiseScorer
from .spec_toml import PIPELINE_SUFFIXES, read_pipeline, read_spec
from .spec_toml import to_toml as unchecked_toml

__all__ = [
    "build",
    "build_scorer",
    "create",
    "llm_listwise",
    "llm_pointwise",
    "read_pipeline",
    "read_spec",
    "resolve_reranker",
    "shared_reranker",
    "to_toml",
]

_SHARED = BuiltOnce("reranker")


def import_factory(ref: str) -> Any:
    """The object a ``"module:attribute"`` string names (``.x`` is relative to rerankit)."""
    module, _, attr = ref.partition(":")
    target: Any = importlib.import_module(module, __package__)
    for part in attr.split("."):
        target = getattr(target, part)
    return target


def create(kind: str, name: str, /, **options: Any) -> Any:
    """A new object for the registered ``name`` of ``kind``, built with ``options``.

    Unknown names, options the factory does not take (the message lists those it does) and
    values not of an option's annotated kind are :class:`ConfigError` s; a Python keyword
    may be written as it is where the factory spells it with a trailing ``_`` (``lambda``
    for ``lambda_``).
    """
    entry = registry.lookup(kind, name)
    factory = entry.factory
    if isinstance(factory, Mapping):
        if options and set(factory) == {"scorer"}:  # one scorer: the options are its own
            step = ScorerReranker(build_scorer({**factory["scorer"], **options}, where=""))
            step.name = name
            return step
        if options:
            raise ConfigError(f"takes no options, got {sorted(options)}", where=name)
        return build(factory, name=name)
    if isinstance(factory, str):
        factory = import_factory(factory)
    options = check_options(factory, options, f"{kind.replace('_', ' ')} {name!r}")
    missing_options(factory, options, f"{kind.replace('_', ' ')} {name!r}")
    try:
        made = factory(**options)
    except TypeError as exc:
        if "argument" not in str(exc):
            raise
        raise ConfigError(f"{kind.replace('_', ' ')} {name!r}: {exc}") from exc
    return _reranker_made(made, name) if kind == "reranker" else made


def _reranker_made(made: Any, name: str) -> Any:
    """What a registered reranker's factory returned: a name, a pipeline file or a model
    given back is loaded, a scorer wrapped (as the built-in ``bm25``'s is); a reranker is
    itself; anything else is an error."""
    if isinstance(made, str | Path) and Path(made).suffix.lower() in PIPELINE_SUFFIXES:
        return build(read_pipeline(made))
    if isinstance(made, str | Scorer) and not isinstance(made, Reranker):
        return resolve_reranker(made)
    if isinstance(made, Reranker) or hasattr(made, "arerank"):
        return made
    raise ConfigError(
        f"reranker {name!r}: its factory returned {type(made).__name__}, not a reranker: "
        "return one (Pipeline([...]), rerankit.load(...)), a scorer, a registered name or "
        "a pipeline file"
    )


def shared_reranker(name: str) -> Any:
    """The registered reranker ``name``, built once per process (and per cache settings in
    force: :func:`rerankit.cache.cache_defaults` and the cache environment variables) and
    shared; built anew after the name is registered again. A factory may load other names;
    one that loads its own, directly or through others, is a ConfigError naming the cycle."""
    entry = registry.lookup("reranker", name)
    # by the registered spelling: hybrid-relative and hybrid_relative share one
    caches = tuple(os.environ.get(v) for v in ("RERANKIT_EMBEDDING_CACHE", "RERANKIT_CACHE_URL"))
    key = (entry.name, current_defaults(), caches)
    return _SHARED.get(key, entry.name, entry, lambda: create("reranker", entry.name))


def resolve_reranker(spec: Any) -> Any:
    """A reranker from a registered name (shared), a model (a local folder or a hub id,
    see :func:`model_reranker`), a reranker (as is) or a scorer (wrapped)."""
    if isinstance(spec, Reranker):
        return spec
    if isinstance(spec, str):
        is_model = Path(spec).is_dir() or ("/" in spec and not spec.startswith((".", "/")))
        if is_model and registry.canonical("reranker", spec) is None:
            return model_reranker(spec)
        if spec.startswith((".", "/")) or "\\" in spec:
            raise ConfigError(  # a path, not a name: say what is wrong with the path
                f"{spec!r} is not a model folder: "
                + ("it is a file" if Path(spec).exists() else "the path does not exist")
            )
        if registry.canonical("reranker", spec) is None:  # nor a file or folder here
            raise registry.unknown_reranker(spec)
        return shared_reranker(spec)
    if isinstance(spec, Scorer):
        return ScorerReranker(spec)
    raise TypeError(f"reranker must be a name, a Reranker or a Scorer, got {type(spec).__name__}")


def model_reranker(model: str) -> Any:
    """The scorer a model folder or hub id is (see :func:`model_kind`), as a reranker:
    ``rerankit rank -r cross-encoder/ms-marco-MiniLM-L6-v2`` as sentence-transformers users
    write it."""
    kind, options = model_kind(model)
    return ScorerReranker(create("scorer", kind, model=model, **options))


def _llm_scorer(
    cls: type,
    kind: str,
    *,
    provider: str = "gemini",
    model: str | None = None,
    base_url: str | None = None,
    api_key_env: str | None = None,
    **options: Any,
) -> Any:
    """An LLM scorer of ``cls`` on a registered provider client, as declared pipelines give
    it: ``provider``, ``model``, ``base_url`` and ``api_key_env`` (the environment variable
    holding the key; the client's own default variables otherwise); the other keys are the
    client's (``json_mode``) or the scorer's, checked by :func:`split_llm_options`."""
    key = os.environ.get(api_key_env) if api_key_env else None
    if not key and KEYS_OPTIONAL.get():  # built for an estimate that sends nothing
        key = "not-sent"
    if api_key_env and not key:
        raise ConfigError(f"environment variable {api_key_env!r} is not set", where="api_key_env")
    entry = registry.lookup("llm_client", provider)
    factory = import_factory(entry.factory) if isinstance(entry.factory, str) else entry.factory
    own, options = split_llm_options(cls, factory, options, f"an {kind} scorer")
    client_options: dict[str, Any] = {"api_key": key, "base_url": base_url, **own}
    if model is not None:
        client_options["model"] = model
    return cls(create("llm_client", provider, **client_options), **options)


def llm_pointwise(**options: Any) -> LLMPointwiseScorer:
    """An :class:`~rerankit.scorers.LLMPointwiseScorer` from declared options (``provider``,
    ``model``, ``base_url``, ``api_key_env`` and the scorer's own keywords)."""
    return _llm_scorer(LLMPointwiseScorer, "llm_pointwise", **options)


def llm_listwise(**options: Any) -> LLMListwiseScorer:
    """An :class:`~rerankit.scorers.LLMListwiseScorer` from declared options (as
    :func:`llm_pointwise`)."""
    return _llm_scorer(LLMListwiseScorer, "llm_listwise", **options)


_STAGE_KINDS = ("reranker", "scorer", "scorers", "rule")
_FUSION_KEYS = ("method", "normalization", "rrf_k", "output_calibration")
#: options of a declared object of a kind that may be a scorer table of their own
_NESTED_SCORERS = {"reranker": ("embedding",)}


def _typed(kind: str, entry: Any, where: str, drop: tuple[str, ...] = ()) -> Any:
    """A registered object of ``kind`` from ``{type = ..., options...}``."""
    if not isinstance(entry, Mapping) or "type" not in entry:
        raise ConfigError(f"expected a table with a 'type' key, got {entry!r}", where=where)
    options = {k: v for k, v in entry.items() if k not in drop}
    name = options.pop("type")
    for key in _NESTED_SCORERS.get(kind, ()):  # e.g. the hybrid's embedding = {type = ...}
        if isinstance(options.get(key), Mapping):
            options[key] = build_scorer(options[key], f"{where}.{key}")
    try:
        return create(kind, name, **options)
    except ConfigError as exc:
        raise ConfigError(str(exc), where=where) from exc
    except (TypeError, ValueError) as exc:  # a factory's own check of an option's value
        raise ConfigError(f"{name}: {exc}", where=where) from exc


def build_scorer(entry: Mapping[str, Any], where: str = "scorer", *, fused: bool = False) -> Any:
    """A scorer from ``{type = ..., ...}``. ``weight`` and ``calibration`` belong to a
    fusion (``fused``: the table is one of its ``scorers``); elsewhere nothing reads them,
    so they are an error."""
    for key in ("weight", "calibration"):
        if not fused and isinstance(entry, Mapping) and key in entry:
            why = f"{key!r} is read only in a fusion's list of scorers (scorers = [...])"
            raise ConfigError(f"{why}; here nothing would read it", where=f"{where}.{key}")
    scorer = _typed("scorer", entry, where, drop=("weight", "calibration") if fused else ())
    try:
        return check_scorer(scorer)
    except TypeError as exc:  # no name, say: where the file names it
        raise ConfigError(f"scorer {entry['type']!r}: {exc}", where=where) from exc


def _weight(entry: Mapping[str, Any], name: str, where: str) -> float:
    if "weight" not in entry:
        raise ConfigError(
            f"scorer {name!r} has no weight, and the other scorers of this fusion have one: "
            "give every scorer a weight, or none for equal weights",
            where=f"{where}.weight",
        )
    w = entry["weight"]
    if isinstance(w, bool) or not isinstance(w, Real):
        raise ConfigError(f"must be a number, got {w!r}", where=f"{where}.weight")
    return float(w)


def _fusion(spec: Mapping[str, Any], name: str | None, where: str) -> Any:
    entries = spec["scorers"]
    if not isinstance(entries, list) or not entries:
        raise ConfigError("a non-empty list of scorer tables", where=f"{where}.scorers")
    scorers = [build_scorer(e, f"{where}.scorers[{i}]", fused=True) for i, e in enumerate(entries)]
    weights = None
    if any("weight" in e for e in entries):
        weights = {
            s.name: _weight(e, s.name, f"{where}.scorers[{i}]")
            for i, (s, e) in enumerate(zip(scorers, entries, strict=True))
        }
    calibration = {
        s.name: e["calibration"]
        for s, e in zip(scorers, entries, strict=True)
        if "calibration" in e
    }
    rrf_k = spec.get("rrf_k", 60.0)
    if isinstance(rrf_k, bool) or not isinstance(rrf_k, Real):
        raise ConfigError(f"must be a number, got {rrf_k!r}", where=f"{where}.rrf_k")
    try:
        method = ScoreCombinationMethod.parse(spec.get("method", "weighted_average"))
    except ValueError as exc:
        raise ConfigError(str(exc), where=f"{where}.method") from exc
    normalization = spec.get("normalization", "min_max")
    try:
        if normalization != "calibrated":
            normalization = check_normalization_method(normalization)
    except ValueError as exc:
        raise ConfigError(str(exc), where=f"{where}.normalization") from exc
    try:
        return FusionReranker(
            scorers,
            method,
            weights,
            normalization_method=normalization,
            rrf_k=float(rrf_k),
            calibration=calibration or None,
            output_calibration=spec.get("output_calibration"),
            name=name or "fusion",
        )
    except (TypeError, ValueError) as exc:
        raise ConfigError(str(exc), where=where) from exc


def _stage(spec: Mapping[str, Any], where: str) -> Stage:
    kinds = [k for k in _STAGE_KINDS if k in spec]
    if len(kinds) != 1:
        raise ConfigError(f"give exactly one of {', '.join(_STAGE_KINDS)}", where=where)
    kind = kinds[0]
    allowed = ("name", "keep", "max_demotion", kind, *(_FUSION_KEYS if kind == "scorers" else ()))
    unknown = unknown_keys(spec, allowed, f"a {kind} stage", stage_spellings(kind, spec[kind]))
    if unknown:
        raise ConfigError(unknown, where=where)
    name, keep = spec.get("name"), spec.get("keep")
    step: Any
    if name is not None and not isinstance(name, str):
        raise ConfigError(f"must be a string, got {name!r}", where=f"{where}.name")
    if keep is not None and (isinstance(keep, bool) or not isinstance(keep, int) or keep < 1):
        raise ConfigError(f"must be a positive integer, got {keep!r}", where=f"{where}.keep")
    try:
        demotion = check_max_demotion(spec.get("max_demotion"))
    except ValueError as exc:
        raise ConfigError(str(exc), where=f"{where}.max_demotion") from None
    if kind == "reranker":
        ref = spec["reranker"]
        if isinstance(ref, Mapping):  # {type = "hybrid", backend = "onnx", ...}: its own copy
            step = _typed("reranker", ref, f"{where}.reranker")
        elif not isinstance(ref, str):
            raise ConfigError(
                f"must be a name or a table with a 'type', got {ref!r}", where=f"{where}.reranker"
            )
        elif Path(ref).suffix.lower() in PIPELINE_SUFFIXES:  # another pipeline file
            try:
                step = build(read_pipeline(ref))
            except ConfigError as exc:
                raise ConfigError(str(in_file(exc, ref)), where=f"{where}.reranker") from exc
        else:
            try:
                step = resolve_reranker(ref)
            except ConfigError as exc:
                raise ConfigError(str(exc), where=f"{where}.reranker") from exc
    elif kind == "scorer":
        step = ScorerReranker(build_scorer(spec["scorer"], f"{where}.scorer"))
    elif kind == "rule":
        step = _typed("rule", spec["rule"], f"{where}.rule")
    else:
        step = _fusion(spec, name, where)
    return Stage(step, keep, name, demotion)


def build(spec: Mapping[str, Any], *, name: str | None = None) -> Any:
    """A reranker from a spec mapping (see the module doc). One plain stage gives that
    stage's reranker; anything more gives a :class:`~rerankit.Pipeline`."""
    spec = dict(spec)
    name = spec.pop("name", name)
    if "plugins" in spec:  # imported before any stage names what they register
        load_plugins(plugin_list(spec.pop("plugins"), "plugins"), "the plugins key")
    staged = "stages" in spec
    if staged:
        stages_spec = spec.pop("stages")
        unknown = unknown_keys(spec, ("name", "plugins", "stages"), "the top level", FILE_SPELLINGS)
        if unknown:
            raise ConfigError(f"{unknown} (next to 'stages')")
    else:
        stages_spec = [spec]
    if not isinstance(stages_spec, list) or not stages_spec:
        raise ConfigError("must be a non-empty list", where="stages")
    stages = []
    for i, s in enumerate(stages_spec):
        if not isinstance(s, Mapping):
            raise ConfigError(f"a stage is a table/mapping, got {s!r}", where=f"stages[{i}]")
        try:
            stages.append(_stage(s, f"stages[{i}]"))
        except ConfigError as exc:  # a spec of one stage, no stages list: its own keys
            raise exc if staged else strip_location(exc, "stages[0]") from None
    only = stages[0]
    plain = only.keep is None and only.max_demotion is None and not isinstance(only.step, Rule)
    if len(stages) == 1 and plain:
        if name and "reranker" not in stages_spec[0]:  # never rename a shared built-in
            only.step.name = name
        return only.step
    return Pipeline(stages, name=name or "pipeline")


def to_toml(spec: Mapping[str, Any], comment: str = "") -> str:
    """A pipeline spec (a mapping of a pipeline file's keys: a ``name`` and ``stages``, as
    ``rerankit tune`` writes them, or a name and a ``reranker`` or ``scorer``) as TOML, with
    ``comment`` on ``#`` lines above it. It is first built as loading the file builds it
    (:func:`build`; no model is loaded and no API key needs to be set), so a misspelt key,
    name or option is the :class:`~rerankit.errors.ConfigError` loading would raise. A
    reranker or scorer object is not a spec: write the spec that builds it."""
    if not isinstance(spec, Mapping):
        raise TypeError(
            f"to_toml takes a pipeline spec, a mapping of a pipeline file's keys, got a "
            f"{type(spec).__name__}; a reranker or scorer built in Python is written as the "
            "spec that builds it, e.g. {'name': 'mine', 'reranker': 'hybrid'} or {'name': "
            "'mine', 'scorer': {'type': 'cross_encoder', 'model': 'FOLDER', 'output': "
            "'sigmoid'}} (CrossEncoderScorer('FOLDER', output='sigmoid'); docs/pipelines.md)"
        )
    token = KEYS_OPTIONAL.set(True)  # written here, used where the key is set
    try:
        build(spec)
    finally:
        KEYS_OPTIONAL.reset(token)
    return unchecked_toml(spec, comment)


def __getattr__(name: str) -> Any:
    if name == "load":  # 0.1.0's; rerankit.load sits above this module and cannot be re-exported
        # an ImportError, so that `from rerankit.config import load` says it too
        raise ImportError(
            "rerankit.config.load is now rerankit.load (from rerankit import load); "
            "rerankit.config.build(spec) builds a spec mapping"
        )
    raise AttributeError(f"module 'rerankit.config' has no attribute {name!r}")
