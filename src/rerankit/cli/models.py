"""``rerankit rerankers`` (what is registered), ``check`` (a pipeline file, without running
it) and ``cache``; ``export`` is :mod:`rerankit.cli.export`'s."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from .. import registry
from .._words import counted
from ..cache import CacheInfo, cache_info, cache_url, clear_cache
from ..cache.redis_store import key_namespace
from .args import UsageError, refuse_unused
from .check import cmd_check, describe

__all__ = [
    "cmd_cache",
    "cmd_check",
    "cmd_rerankers",
    "describe",
]


def cmd_rerankers(args: argparse.Namespace) -> int:

    rows = [(e.name, e.summary, needs_said(e.needs)) for e in registry.entries("reranker")]
    if args.all:
        for kind in ("scorer", "rule", "llm_client"):
            rows += [
                (f"{kind}:{e.name}", e.summary, needs_said(e.needs)) for e in registry.entries(kind)
            ]
    width = max(len(r[0]) for r in rows)
    summary = max(len(r[1]) for r in rows)
    print(f"{'name':<{width}}  {'what':<{summary}}  needs")
    for name, what, needs in rows:
        print(f"{name:<{width}}  {what:<{summary}}  {needs or 'nothing extra'}")
    print("\n" + ALSO_ACCEPTED)
    return 0


def needs_said(needs: Sequence[str]) -> str:
    """What an entry needs, as ``rerankers`` lists it: ``extra:`` once for several extras
    (``extra: learn and torch``), then anything else; ``nothing extra`` for nothing."""
    extras = [n.removeprefix("extra: ") for n in needs if n.startswith("extra: ")]
    said = [f"extra: {' and '.join(extras)}"] if extras else []
    return "; ".join([*said, *(n for n in needs if not n.startswith("extra: "))]) or (
        "nothing extra"
    )


#: what ``rerankit rerankers`` says after the names: the other things a reranker may be
ALSO_ACCEPTED = """\
Reranker names are spelled with - (hybrid-relative, cross-encoder), the types of a pipeline
file with _ (cross_encoder, min_score); either spelling works for either (cross_encoder =
cross-encoder). Wherever a reranker is named (-r, --rerankers, reranker= in Python,
[pipelines.NAME] of the service) these work too:
  a pipeline file   .toml, .yaml or .json (its scorer and rule types: rerankers --all)
  a model           a Hugging Face hub id or a model folder, e.g.
                    cross-encoder/ms-marco-MiniLM-L6-v2 or BAAI/bge-reranker-base: a
                    cross-encoder, embedding model or causal-LM reranker, told apart by its
                    config.json (extra torch). A hub id is downloaded once into the Hugging
                    Face cache; offline, pass the folder of a saved copy instead."""


def _readable(size: float) -> str:
    """``size`` bytes in B, KB, MB or GB."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size:.0f} B"


#: what a cache's entries are called, where they are not entries
UNITS = {"onnx": ("export", "exports"), "wordfreq": ("language", "languages")}

#: why ``clear`` kept a folder (:attr:`~rerankit.cache.ClearedCache.kept`)
KEPT = {
    "local": "on this machine; `rerankit cache clear {name}`",
    "cannot-export": "this install cannot export the models again: that needs torch; "
    "`rerankit cache clear onnx` removes them",
}


def _info_line(cache: CacheInfo) -> str:
    """One cache as ``rerankit cache info`` shows it."""
    if not cache.found:
        return f"{cache.name}: {cache.where} (empty): {cache.holds}"
    one, many = UNITS.get(cache.name, ("entry", "entries"))
    said = counted(cache.entries, one, many)
    if cache.name in UNITS:
        said += ": " + ", ".join(cache.items) if cache.items else ""
    size = ("~" if cache.estimated else "") + _readable(cache.bytes)
    return f"{cache.name}: {cache.where}, {said}, {size}: {cache.holds}"


def cmd_cache(args: argparse.Namespace) -> int:
    """Where every cache is, what it holds and how big it is; ``clear`` empties them (in a
    shared Redis, only rerankit's keys under its namespace): :func:`rerankit.cache.cache_info`
    and :func:`rerankit.cache.clear_cache`, said in lines."""
    url = cache_url(args.url)  # --url, else $RERANKIT_CACHE_URL; None: SQLite here
    if url is None:
        refuse_unused(
            {"--namespace": args.namespace},
            "without a server (--url, or $RERANKIT_CACHE_URL): the SQLite files here have no "
            "key prefix",
        )
    else:  # one namespace, said once: a settings file refuses both too
        try:
            key_namespace(url, args.namespace, "--namespace")
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    if args.action == "clear":
        for done in clear_cache(args.what, url or "", args.namespace):
            if done.kept:
                print(f"kept {done.name}: {done.where} ({KEPT[done.kept].format(name=done.name)})")
            elif done.entries is None:  # a folder, removed whole
                print(f"cleared {done.name}: {done.where}")
            else:
                removed = counted(done.entries, "entry", "entries")
                print(f"cleared {done.name}: {done.where} ({removed})")
        return 0
    caches = cache_info(url or "", args.namespace, args.what)
    stores = [cache for cache in caches if cache.name not in UNITS]
    for cache in stores:
        print(_info_line(cache))
        for note in cache.notes:
            print(f"  {note}")
    for note in next((cache.server for cache in stores if cache.server), ()):  # one server
        print(f"  {note}")
    for cache in caches[len(stores) :]:  # this machine's folders
        print(_info_line(cache))
    return 0
