"""The parsers of ``rerankers``, ``check``, ``cache`` and ``export``: their flags, help and
checks, and nothing the commands run (:mod:`rerankit.cli.models`, :mod:`rerankit.cli.check`
and :mod:`rerankit.cli.export`, imported when one runs)."""

from __future__ import annotations

import argparse
from typing import Any

from ..args import (
    examples,
)
from . import check as check_commands
from . import export as export_command
from .shown import CACHE_NAMES

__all__ = ["add_commands", "cache_name"]


def cache_name(value: str) -> str:
    """A cache's name as :data:`~rerankit.cache.manage.CACHE_NAMES` spells it
    (:func:`~rerankit.cache.manage.cache_name`: ``embedding`` -> ``embeddings``)."""
    if value in ("all", *CACHE_NAMES):
        return value
    from ...cache.manage import cache_name as spelled

    return spelled(value)


def _cache_options(parser: argparse.ArgumentParser, default: Any) -> None:
    """``--url`` and ``--namespace``, on ``cache`` and on each of its actions (where
    ``default`` is SUPPRESS, so a value given before the action is kept)."""
    parser.add_argument(
        "--url",
        default=default,
        help="a Redis/Valkey server, e.g. redis://127.0.0.1:6379/0 (default: "
        "$RERANKIT_CACHE_URL; neither: the SQLite files on this machine)",
    )
    parser.add_argument(
        "--namespace",
        default=default,
        help="with a server: the key prefix rerankit's entries use (default rerankit; or "
        "?namespace=NAME in the url, not both)",
    )


def add_commands(sub: Any) -> None:
    """``rerankers``, ``cache`` and ``export``."""
    names = sub.add_parser(
        "rerankers",
        help="list the named rerankers and what each needs",
        description="The registered rerankers with a line on each and what it needs (extras to "
        "install, environment variables). --all adds scorers, ordering rules and LLM clients "
        "(the types a pipeline file names).",
        **examples(
            "rerankit rerankers",
            "rerankit rerankers --all  # with scorers, rules and LLM clients",
            "rerankit rerankers --plugin my_rerankers.py  # with a plugin's",
        ),
    )
    names.add_argument("--all", action="store_true", help="also list scorers, rules and clients")
    check_commands.add_commands(sub)
    cache = sub.add_parser(
        "cache",
        help="show or clear rerankit's caches",
        description="Show (info, the default) or clear rerankit's caches: document embeddings, "
        "LLM judgments and whole answers (SQLite files in the rerankit cache directory: "
        "$RERANKIT_CACHE_DIR, else $XDG_CACHE_HOME/rerankit, else ~/.cache/rerankit), or, "
        "with --url or $RERANKIT_CACHE_URL, those in a shared Redis/Valkey server; and this "
        "machine's ONNX exports (onnx/) and BM25's word-frequency tables (wordfreq/). "
        "`rerankit cache info --help` and `rerankit cache clear --help` say more.",
        **examples(
            "rerankit cache  # every cache: where, entries, size",
            "rerankit cache info embeddings  # that cache alone",
            "rerankit cache clear judgments",
            "rerankit cache info --url redis://127.0.0.1:6379/0  # a shared server's",
        ),
    )
    _cache_options(cache, None)
    cache.set_defaults(what="all")
    actions = cache.add_subparsers(dest="action", metavar="{info,clear}", required=False)
    actions.default = "info"  # `rerankit cache` alone
    info = actions.add_parser(
        "info",
        help="where each cache is, its entries and size (the default)",
        description="Where each cache is, how many entries it holds and how big it is. "
        "With a server (--url or $RERANKIT_CACHE_URL): rerankit's keys by cache, the "
        "server's memory settings and its lookups (keyspace hits and misses, every key and "
        "client; a service's /metrics counts rerankit's own: rerankit_cache_lookups_total, "
        "rerankit_answer_cache_total).",
        **examples(
            "rerankit cache info",
            "rerankit cache info onnx  # the ONNX exports, by folder or hub id",
            "rerankit cache info answers --url redis://127.0.0.1:6379/0",
        ),
    )
    clear = actions.add_parser(
        "clear",
        help="delete rerankit's cached entries (all, or one cache)",
        description="Delete rerankit's cached entries: all of them, or one cache. In a shared "
        "Redis/Valkey database only the keys under rerankit's namespace go, nothing else; "
        "with a server, `clear` (all) empties the server's caches and leaves this machine's "
        "folders (`clear onnx` and `clear wordfreq` remove those); without torch, it keeps the "
        "ONNX exports, which this install could not make again (`clear onnx` removes them).",
        **examples(
            "rerankit cache clear judgments  # the LLM judges' cached answers",
            "rerankit cache clear answers --url redis://127.0.0.1:6379/0",
            "rerankit cache clear onnx  # this machine's ONNX exports",
        ),
    )
    for action in (info, clear):
        action.add_argument(
            "what",
            type=cache_name,
            choices=("all", *CACHE_NAMES),
            nargs="?",
            default="all",
            help="which cache (default all; embedding, judgment and answer work too); "
            "judgments are the LLM judges' cached answers, never your judged queries' files",
        )
        _cache_options(action, argparse.SUPPRESS)

    export_command.add_command(sub)
