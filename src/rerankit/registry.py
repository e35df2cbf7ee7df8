"""Every name rerankit knows, in one table: rerankers, scorers, ordering rules and LLM
clients, each mapped to a factory, a one-line summary and what it needs.

A factory is a ``"module:attribute"`` string (imported only when the name is first built,
so a backend whose extra is missing costs nothing until used, and then raises a
:class:`~rerankit.MissingDependencyError` naming the extra), a callable, or, for rerankers,
a declared pipeline. This module only holds the table: :mod:`rerankit.config` turns names
into objects (``config.create``), for the CLI, the service, declared pipelines and the
integrations alike. A plugin adds a name with one ``register`` call; a built-in scorer
is a module plus a ``register`` line here, exported, documented and tested as
docs/layout.md's "Adding a part" says.

A name is the same whether its words are joined by ``-`` or ``_`` (``cross-encoder`` and
``cross_encoder``, ``hybrid-relative`` and ``hybrid_relative``): every lookup accepts both,
and listings show the spelling it was registered with.
"""

from __future__ import annotations

import difflib
import itertools
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError
from .plugins import HOW
from .spec_toml import PIPELINE_SUFFIXES

__all__ = [
    "KINDS",
    "REMOVED_RERANKERS",
    "Entry",
    "available",
    "canonical",
    "entries",
    "lookup",
    "name_of",
    "register",
    "unknown_reranker",
]

KINDS = ("reranker", "scorer", "rule", "llm_client")


@dataclass(frozen=True)
class Entry:
    """A registered name: its ``factory``, a one-line ``summary``, and what it ``needs``
    (extras to install, environment variables)."""

    kind: str
    name: str
    factory: str | Callable[..., Any] | Mapping[str, Any]
    summary: str = ""
    needs: tuple[str, ...] = ()


_ENTRIES: dict[tuple[str, str], Entry] = {}
_BUILT_IN: dict[tuple[str, str], Entry] = {}  # filled at the end of this module
logger = logging.getLogger(__name__)


def _key(name: str) -> str:
    """``name`` with ``-`` and ``_`` made the same (the two spellings are one name)."""
    return name.replace("-", "_")


def register(
    kind: str,
    name: str,
    factory: str | Callable[..., Any] | Mapping[str, Any],
    *,
    summary: str = "",
    needs: tuple[str, ...] = (),
) -> None:
    """Make ``name`` of ``kind`` available in this process (``rerankit.load``, pipeline
    files and specs, ``rerank(reranker=...)``), replacing an earlier registration: a WARNING
    in the log when that was a built-in, an INFO when it was your own. The ``rerankit``
    command and ``rerankit serve`` know it once they import the module that calls this:
    name that module with ``--plugin MODULE``, ``RERANKIT_PLUGINS=MODULE`` or
    ``plugins = ["MODULE"]`` in the pipeline or settings file (see :mod:`rerankit.plugins`)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    key = (kind, _key(name))
    earlier = _ENTRIES.get(key)
    if earlier is not None and earlier is _BUILT_IN.get(key):
        what = factory if isinstance(factory, str) else getattr(factory, "__qualname__", "")
        logger.warning(
            "%s %r now names your %s, replacing the built-in one in this process",
            kind.replace("_", " "),
            name,
            repr(what) if what else "spec",
        )
    elif earlier is not None:
        logger.info("%s %r registered again: the new factory replaces the earlier", kind, name)
    _ENTRIES[key] = Entry(kind, name, factory, summary, tuple(needs))


def entries(kind: str) -> list[Entry]:
    """The registered entries of ``kind``, by name."""
    return sorted((e for (k, _), e in _ENTRIES.items() if k == kind), key=lambda e: e.name)


def available(kind: str) -> list[str]:
    """The registered names of ``kind``."""
    return [e.name for e in entries(kind)]


def canonical(kind: str, name: str) -> str | None:
    """The registered spelling of ``name`` (``cross-encoder`` -> ``cross_encoder``), or None
    when ``name`` is not registered as ``kind``."""
    entry = _ENTRIES.get((kind, _key(name))) if isinstance(name, str) else None
    return entry.name if entry is not None else None


def name_of(kind: str, obj: Any) -> str | None:
    """The registered name of ``kind`` whose factory is ``obj``'s class (as a pipeline file
    spells its ``type``: ``deduplicate``, not ``Deduplicate``), or None."""
    cls = type(obj)
    for entry in entries(kind):
        factory = entry.factory
        if isinstance(factory, str):
            module, _, attr = factory.partition(":")
            module = f"rerankit{module}" if module.startswith(".") else module
            if (module, attr) == (cls.__module__, cls.__qualname__):
                return entry.name
        elif factory is cls:
            return entry.name
    return None


def lookup(kind: str, name: str) -> Entry:
    """The entry of ``name`` (either spelling); a :class:`~rerankit.errors.ConfigError`
    listing the others if none."""
    entry = _ENTRIES.get((kind, _key(name)))
    if entry is None:
        names = available(kind)
        close = _close(name, names)
        hint = f"did you mean {' or '.join(map(repr, close))}? " if close else ""
        known = ", ".join(names) or "none"
        how = f"; {HOW}" if kind != "llm_client" else ""
        raise ConfigError(
            f"unknown {kind.replace('_', ' ')} {name!r}; {hint}available: {known}{how}"
        )
    return entry


#: reranker names an earlier rerankit registered, and what to use instead
REMOVED_RERANKERS = {
    "hybrid-bm25": (
        "it did what 'hybrid' does (the hybrid ranks by the texts alone unless given a "
        "first_stage_weight): use hybrid"
    ),
}


def unknown_reranker(name: str) -> ConfigError:
    """The error of a reranker ``name`` that is neither registered nor a file or folder in
    the current folder: a reranker is also a pipeline file, a model folder or a hub id, so
    it says that none of those is there either, with the closest names registered and the
    closest files and folders here (``tiny-c`` finds the folder ``tiny-ce``); a name an
    earlier rerankit registered says what replaced it (:data:`REMOVED_RERANKERS`), and a
    scorer or rule type (``coverage``, ``mmr``) shows the pipeline file that uses it."""
    removed = REMOVED_RERANKERS.get(str(name).replace("_", "-").lower())
    if removed is not None and not os.path.exists(name):
        return ConfigError(f"reranker {name!r} was removed: {removed}")
    part = _part_of_a_pipeline(name)
    if part is not None and not os.path.exists(name):
        return ConfigError(part)
    names = available("reranker")
    close = [repr(n) for n in _close(name, names)]
    here = _entries_here()
    others = [e for e in here if e != name]  # (the name itself: said below)
    for found in difflib.get_close_matches(name, others, n=2, cutoff=0.75):
        close.append(f"the {here[found]} {found!r}")
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    try:
        where = os.getcwd()
    except OSError:  # (it was removed)
        where = "the current folder"
    if os.path.isfile(name):  # there, but not a file a reranker can be
        there = (
            f"the file {name!r} in {where} is no pipeline file ({', '.join(PIPELINE_SUFFIXES)}) "
            "and no model folder"
        )
    else:
        there = f"no pipeline file or model folder {name!r} is in {where} (no such file or folder)"
    return ConfigError(
        f"unknown reranker {name!r}: no reranker is registered by that name, and {there}; "
        f"{hint}available: {', '.join(names) or 'none'}; {HOW}"
    )


def _part_of_a_pipeline(name: str) -> str | None:
    """What to write when ``name`` is no reranker but a scorer or rule type (``-r coverage``):
    a pipeline file naming it, passed where a reranker is named; None for any other name."""
    for kind, key, what in (("scorer", "scorer", "a scorer type"), ("rule", "rule", "a rule")):
        registered = canonical(kind, name)
        if registered is None:
            continue
        file = f"{registered.replace('_', '-')}.toml"
        example = f"{key} = {{ type = {registered!r} }}".replace("'", '"')
        if kind == "rule":  # a rule orders what a scorer's stage ranked
            example = f'[[stages]]\nscorer = {{ type = "bm25" }}\n[[stages]]\n{example}'
        return (
            f"{name!r} is {what}, not a reranker: use it in a pipeline file ({file}, with its "
            f"options beside type):\n{example}\nand name that file as the reranker "
            f'(rerankit rank -r {file}, rerankit.load("{file}")); see the {kind}s in '
            "`rerankit rerankers --all`"
        )
    return None


def _entries_here(limit: int = 5000) -> dict[str, str]:
    """The files and folders in the current folder (at most ``limit`` looked at; hidden
    ones left out), each with ``file`` or ``folder``."""
    try:
        with os.scandir() as found:
            return {
                e.name: "folder" if e.is_dir() else "file"
                for e in itertools.islice(found, limit)
                if not e.name.startswith(".")
            }
    except OSError:  # the current folder is gone or unreadable: nothing to offer
        return {}


def _close(name: str, names: list[str]) -> list[str]:
    """The names nearest to ``name``, whatever its case (``ACME`` finds ``acme``)."""
    by_lower = {n.lower(): n for n in names}
    close = difflib.get_close_matches(str(name).lower(), list(by_lower), n=2, cutoff=0.6)
    return [by_lower[c] for c in close]


# --- built-ins -------------------------------------------------------------------------------

_TORCH = ("extra: torch",)
#: embedding, hybrid and cross-encoders also run on ONNX Runtime from a folder written by
#: `rerankit export`
_TORCH_OR_ONNX = ("extra: torch, or onnx with an exported model",)
_GEMINI = ("extra: gemini", "env: GEMINI_API_KEY or GOOGLE_API_KEY")
_OPENAI = ("extra: openai", "env: OPENAI_API_KEY")

# scorers (the `type` of a declared scorer)
register("scorer", "bm25", ".scorers.lexical:BM25Scorer", summary="Okapi BM25 over the candidates")
register(
    "scorer", "jaccard", ".scorers.lexical:JaccardScorer", summary="query/document term overlap"
)
register("scorer", "text", ".scorers.lexical:TextSimilarity", summary="BM25 and Jaccard blended")
register(
    "scorer",
    "proximity",
    ".scorers.proximity:ProximityScorer",
    summary="query terms next to each other in the document (background idf)",
)
register("scorer", "coverage", ".scorers.coverage:CoverageScorer", summary="share of query terms")
register(
    "scorer",
    "prf",
    ".scorers.prf:PRFScorer",
    summary="dense pseudo-relevance feedback from the previous stage's best",
    needs=_TORCH,
)
register("scorer", "position", ".scorers.prf:PositionScorer", summary="the previous stage's order")
register(
    "scorer",
    "learned",
    ".scorers.learned:LearnedScorer",
    summary="a LightGBM ranker trained by rerankit tune --method ltr",
    needs=("extra: learn", "extra: torch"),
)
register("scorer", "field", ".scorers.field:FieldScorer", summary="a numeric field of the document")
register(
    "scorer", "recency", ".scorers.field:RecencyScorer", summary="newer is better (half_life_days)"
)
register("scorer", "popularity", ".scorers.field:PopularityScorer", summary="log-scaled count")
register(
    "scorer",
    "graph",
    ".scorers.graph:GraphScorer",
    summary="graph importance",
    needs=("extra: graph",),
)
register(
    "scorer",
    "embedding",
    ".scorers.embedding:EmbeddingScorer",
    summary="bi-encoder cosine",
    needs=_TORCH_OR_ONNX,
)
register(
    "scorer",
    "cross_encoder",
    ".scorers.cross_encoder:CrossEncoderScorer",
    summary="cross-encoder logit",
    needs=_TORCH_OR_ONNX,
)
register(
    "scorer",
    "causal_lm",
    ".scorers.causal_lm:CausalLMScorer",
    summary="causal LM P(yes)",
    needs=_TORCH,
)
register(
    "scorer",
    "llm_pointwise",
    ".config:llm_pointwise",
    summary="LLM judge, 0-10 per document",
    needs=("extra: gemini or openai",),
)
register(
    "scorer",
    "llm_listwise",
    ".config:llm_listwise",
    summary="LLM judge, one permutation per window",
    needs=("extra: gemini or openai",),
)

# ordering rules (the `type` of a declared rule)
register(
    "rule", "difficulty", ".ordering:DifficultyOrdering", summary="introductory before advanced"
)
register("rule", "mmr", ".ordering:MMR", summary="maximal marginal relevance")
register("rule", "min_score", ".ordering:MinScore", summary="drop documents below a score")
register("rule", "deduplicate", ".ordering:Deduplicate", summary="drop near-duplicates")
register("rule", "pin", ".pins:Pin", summary="pin or bury documents by id, per query")
register("rule", "cap", ".caps:Cap", summary="at most N documents per value of a field")

# LLM clients (the `provider` of a declared LLM scorer)
register("llm_client", "gemini", ".llm.gemini:GeminiClient", summary="Google Gemini", needs=_GEMINI)
register(
    "llm_client",
    "openai",
    ".llm.openai_client:OpenAIClient",
    summary="OpenAI-compatible chat completions",
    needs=_OPENAI,
)

# named rerankers
register(
    "reranker",
    "bm25",
    {"scorer": {"type": "bm25"}},
    summary="BM25 over the candidates (fast, no model)",
)
register(
    "reranker", "jaccard", {"scorer": {"type": "jaccard"}}, summary="term overlap (fast, no model)"
)
register(
    "reranker",
    "text",
    {"scorer": {"type": "text"}},
    summary="BM25 + Jaccard blend (fast, no model)",
)
register(
    "reranker",
    "embedding",
    {"scorer": {"type": "embedding"}},
    summary="all-MiniLM-L6-v2 cosine",
    needs=_TORCH_OR_ONNX,
)
register(
    "reranker",
    "hybrid",
    ".rerankers.hybrid:HybridReranker",
    summary="the default: MiniLM, BM25 and term proximity read from the texts, calibrated "
    "P(relevant)",
    needs=_TORCH_OR_ONNX,
)
register(
    "reranker",
    "hybrid-relative",
    ".rerankers.hybrid:relative_hybrid",
    summary="the hybrid with min-max fusion and candidate-idf BM25 (scores per request)",
    needs=_TORCH_OR_ONNX,
)
# reranker names are spelled with "-" (hybrid-relative, cross-encoder), the types of a
# pipeline file with "_" (cross_encoder, min_score); either spelling finds either (_key)
# a model scorer alone with its default model; another model is named as the reranker
# itself (its hub id or folder: -r ./my-ce, reranker="./my-ce"), as `rerankit rerankers`
# says below its table, or with model = in a pipeline file (serve --model)
_ANOTHER = "; for another, name its hub id or folder as the reranker"
for _kind, _what in (
    ("cross_encoder", f"a cross-encoder (ms-marco-MiniLM-L6-v2{_ANOTHER})"),
    ("causal_lm", f"an LLM reranker's P(yes) (Qwen3-Reranker-0.6B{_ANOTHER})"),
):
    register(
        "reranker",
        _kind.replace("_", "-"),
        {"scorer": {"type": _kind}},
        summary=_what,
        needs=_TORCH_OR_ONNX if _kind == "cross_encoder" else _TORCH,
    )
for _provider, _needs in (("gemini", _GEMINI), ("openai", _OPENAI)):
    for _mode in ("pointwise", "listwise"):
        register(
            "reranker",
            f"{_provider}-{_mode}",
            {"scorer": {"type": f"llm_{_mode}", "provider": _provider}},
            summary=f"{_provider} LLM judge, {_mode}",
            needs=_needs,
        )

_BUILT_IN.update(_ENTRIES)  # everything registered above: a later registration warns
