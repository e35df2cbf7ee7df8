"""Argument types and helpers the command groups share."""

from __future__ import annotations

import argparse
import os
from typing import Any

from ..backends.manifest import BACKENDS
from ..errors import InputError
from .spellings import (
    CurrentSpelling,
    OldSpelling,
    add_old_spelling,
    one_spelling,
    say_renamed,
)

__all__ = [
    "MODEL_KINDS_SHOWN",
    "CurrentSpelling",
    "OldSpelling",
    "UsageError",
    "add_address_argument",
    "add_backend_arguments",
    "add_candidates_argument",
    "add_data_argument",
    "add_embedding_cache_arguments",
    "add_first_stage_argument",
    "add_language_argument",
    "add_max_queries_argument",
    "add_metrics_argument",
    "add_no_progress_argument",
    "add_old_spelling",
    "add_refused_flag",
    "embedding_cache_choice",
    "examples",
    "language_code",
    "metrics_argument",
    "model_kind_name",
    "non_negative_float",
    "one_spelling",
    "port_number",
    "positive_float",
    "positive_int",
    "query_text",
    "refuse_unused",
    "remember_defaults",
    "say_renamed",
    "use_embedding_cache",
]


def positive_int(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {n}")
    return n


class ExamplesFormatter(argparse.HelpFormatter):
    """argparse's help, but an epilog's example lines (indented by two spaces) kept as
    written, one a line, while the other paragraphs wrap as usual."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        lines = []
        for line in text.splitlines():
            if line.startswith("  ") or not line.strip():
                lines.append(indent + line)
            else:
                lines.append(super()._fill_text(line, width, indent))
        return "\n".join(lines)


def examples(*commands: str, intro: str = "examples:") -> dict[str, Any]:
    """A subcommand's ``epilog`` of runnable ``commands`` (each ``rerankit ...``, optionally
    ``  # why`` after it), with the formatter that keeps them one a line: pass it to
    ``add_parser`` as ``**examples(...)``. ``tests/cli`` parses every one."""
    return {
        "epilog": "\n".join([intro, *(f"  {c}" for c in commands)]),
        "formatter_class": ExamplesFormatter,
    }


class UsageError(InputError):
    """Flags that cannot go together: :func:`~rerankit.cli.main` says it as argparse
    says a usage error (exit status 2)."""


def refuse_unused(given: dict[str, Any], why: str) -> None:
    """Stop with a :class:`UsageError` naming every flag of ``given`` (flag -> value, None
    when not given) that was given, none of which would take effect (``why``)."""
    named = [flag for flag, value in given.items() if value is not None]
    if named:
        flags = ", ".join(named)
        raise UsageError(f"{flags} {'has' if len(named) == 1 else 'have'} no effect {why}")


def remember_defaults(parser: Any) -> None:
    """Keep each of ``parser``'s flags, by destination, with its name and default on the
    namespace it parses, for :func:`given` (call it after the last ``add_argument``)."""
    flags: dict[str, tuple[str, Any]] = {}
    for action in parser._actions:
        if action.option_strings and action.default is not argparse.SUPPRESS:
            name = next((o for o in action.option_strings if o.startswith("--")), None)
            flags.setdefault(action.dest, (name or action.option_strings[0], action.default))
    parser.set_defaults(flag_defaults=flags)


def given(args: argparse.Namespace, *dests: str) -> dict[str, Any]:
    """``{flag: value}`` for each of ``dests`` (a flag's value, or None where it is left at
    its default): what :func:`refuse_unused` takes, for flags whose default is a value."""
    out = {}
    for dest in dests:
        flag, default = args.flag_defaults[dest]
        value = getattr(args, dest)
        out[flag] = None if value == default else value
    return out


def query_text(value: str) -> str:
    """``rank --query``: any text but an empty one (an unset shell variable, most often),
    refused as ``batch`` refuses a row without a query and the service a request."""
    if not value.strip():
        raise argparse.ArgumentTypeError(
            "the query is empty: give the words to rank the documents by"
        )
    return value


def port_number(value: str) -> int:
    """A TCP port to listen on, 1 to 65535 (refused before any model loads)."""
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {value!r}") from None
    if not 1 <= n <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port from 1 to 65535, got {n}")
    return n


def language_code(value: str) -> str:
    """``--language``: an ISO 639-1 code, checked as the library checks it
    (:func:`rerankit.text.check_language`), before anything loads."""
    from ..text.language import check_language  # (not while the parser is built)

    try:
        return check_language(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


#: the model kinds ``train`` and ``export --kind`` take, as the registry spells them
MODEL_KINDS = ("embedding", "cross_encoder")
#: how their help shows them: spelled as reranker names are, with ``-``
MODEL_KINDS_SHOWN = "{embedding,cross-encoder}"


def model_kind_name(value: str) -> str:
    """A model kind as the registry spells it (``cross-encoder`` -> ``cross_encoder``; either
    spelling is taken), or an error naming them as the help does."""
    kind = value.replace("-", "_")
    if kind not in MODEL_KINDS:
        raise argparse.ArgumentTypeError(
            f"expected embedding or cross-encoder (cross_encoder works too), got {value!r}"
        )
    return kind


def positive_float(value: str) -> float:
    try:
        x = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {value!r}") from None
    if not 0 < x < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {value}")
    return x


def non_negative_float(value: str) -> float:
    """A number >= 0 (seconds, ``--shutdown-delay 0``: none; a step size, 0: weights kept)."""
    try:
        x = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {value!r}") from None
    if not 0 <= x < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {value}")
    return x


class Refused(argparse.Action):
    """A flag a command does not take but a user may reach for (hidden from ``--help``):
    giving it stops with ``why``, instead of argparse's "ambiguous option" when it is the
    start of flags the command does take."""

    def __init__(self, option_strings: Any, dest: str, *, why: str, **kwargs: Any) -> None:
        kwargs.update(nargs="?", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        super().__init__(option_strings, dest, **kwargs)
        self.why = why

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None):
        parser.error(f"{option_string}: {self.why}")


def add_refused_flag(parser: Any, flag: str, *, why: str) -> None:
    """Stop with ``why`` when ``flag`` is given: see :class:`Refused`."""
    parser.add_argument(
        flag, dest=f"refused_{flag.lstrip('-').replace('-', '_')}", action=Refused, why=why
    )


def add_candidates_argument(
    parser: Any, help: str = "candidates per query", *, default: int = 100
) -> None:
    """``--candidates N``: how many first-stage candidates each query gets (``default``;
    ``--k``, its earlier spelling, still works, its note saying what it counts, as a user
    may take it for a metric's cutoff). Top-k, where a command has it, is
    ``--top-k``/``-k``."""
    parser.add_argument(
        "--candidates",
        dest="candidates",
        type=positive_int,
        default=default,
        metavar="N",
        help=f"{help} (default {default})",
    )
    add_old_spelling(
        parser, "--k", dest="candidates", now="--candidates", type=positive_int, hint=_k_means
    )


def _k_means(parser: Any) -> str:
    """What ``--k`` counts, said with its note; where the command has ``--metrics``, how a
    metric's cutoff is given instead."""
    cutoff = (
        "; a metric's cutoff is --metrics ndcg@5"
        if "--metrics" in parser._option_string_actions
        else ", not a metric's cutoff"
    )
    return "how many first-stage candidates each query gets" + cutoff


def add_language_argument(parser: Any) -> None:
    """``--language``: the language the lexical signals read (stemming, stop words, the
    background word frequencies) for a registered reranker."""
    parser.add_argument(
        "--language",
        type=language_code,
        default=None,
        metavar="CODE",
        help="the documents' language for the lexical signals, an ISO 639-1 code (en, de, fr, "
        "zh, ...; default en; another is refused with the list of codes), for a registered "
        "reranker such as hybrid or bm25",
    )


def add_backend_arguments(parser: Any, *, service: bool = False) -> None:
    """``--backend`` and ``--quantize``: where the embedding model runs (the same flags,
    choices and defaults on ``rank``, ``batch``, ``eval`` and ``serve``; read by
    :func:`pipeline_spec`, and by the service's settings)."""
    default = "the settings file's backend, else auto" if service else "auto"
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        default=None,
        help=f"where the embedding model of hybrid and embedding (or a --reranker model) "
        f"runs (default: {default}): auto runs the bundled all-MiniLM-L6-v2 and folders "
        "written by rerankit export on ONNX Runtime when it is installed (the same scores "
        "as torch within 1e-4, without importing torch; the bundled model is exported once, "
        "on first use), anything else on torch; torch; onnx",
    )
    parser.add_argument(
        "--quantize",
        choices=("int8",),
        default=None,
        help="int8 weights on ONNX Runtime (with --backend onnx or auto): faster, scores "
        "slightly different from float32's",
    )


def add_address_argument(parser: Any) -> None:
    """``--address``: the Ray cluster of ``--engine ray`` (``batch`` and ``eval``)."""
    parser.add_argument(
        "--address",
        default=None,
        help="ray: a running cluster's address, HEAD:6379 as `ray start --head` prints it "
        "(default: start Ray on this machine)",
    )


def add_embedding_cache_arguments(parser: Any) -> None:
    """``--embedding-cache`` and ``--no-embedding-cache`` (read by :func:`use_embedding_cache`)."""
    parser.add_argument(
        "--embedding-cache",
        default=None,
        metavar="FILE",
        help="SQLite file caching document embeddings across runs (default: "
        "$RERANKIT_EMBEDDING_CACHE, else the server $RERANKIT_CACHE_URL names, else "
        "embeddings.sqlite in the rerankit cache directory)",
    )
    parser.add_argument(
        "--no-embedding-cache", action="store_true", help="encode documents afresh, keep nothing"
    )


def add_embedding_cache_if_asked_arguments(parser: Any, example: str, usually: str) -> None:
    """``--embedding-cache`` and ``--no-embedding-cache`` of a command that keeps no
    embeddings unless asked (``batch``, ``rank``: their documents are usually new; read by
    :func:`embedding_cache_if_asked`): ``example``, when to keep them; ``usually``, why not."""
    parser.add_argument(
        "--embedding-cache",
        default=None,
        metavar="FILE",
        help=f"SQLite file keeping document embeddings across runs, e.g. {example} (default: "
        "$RERANKIT_EMBEDDING_CACHE, else the server $RERANKIT_CACHE_URL names, else none: "
        f"{usually})",
    )
    parser.add_argument(
        "--no-embedding-cache",
        action="store_true",
        help="keep no embeddings, even where $RERANKIT_EMBEDDING_CACHE names a file",
    )


def embedding_cache_if_asked(args: argparse.Namespace) -> None:
    """What :func:`add_embedding_cache_if_asked_arguments` asked for, for every embedding
    scorer built from here on: --embedding-cache FILE, no file with --no-embedding-cache,
    else as the environment says."""
    from ..cache import EMBEDDING_CACHE_ENV, embedding_cache_file  # as the command runs

    choice = embedding_cache_choice(args)
    if choice is not None:
        os.environ[EMBEDDING_CACHE_ENV] = embedding_cache_file(choice) or ""


def use_embedding_cache(args: argparse.Namespace) -> None:
    """Document embeddings cached on disk by default (read by every EmbeddingScorer built
    from here on), so every reranker of an evaluation, and the next evaluation, encode each
    document once: --embedding-cache, else $RERANKIT_EMBEDDING_CACHE, else the server
    $RERANKIT_CACHE_URL names, else embeddings.sqlite in the rerankit cache directory;
    --no-embedding-cache turns it off (:func:`rerankit.cache.embedding_cache_file`)."""
    from ..cache import EMBEDDING_CACHE_ENV, embedding_cache_file  # as the command runs

    value = embedding_cache_file(embedding_cache_choice(args))
    if value is not None:
        os.environ[EMBEDDING_CACHE_ENV] = value


def embedding_cache_choice(args: argparse.Namespace) -> str | bool | None:
    """--embedding-cache FILE, False for --no-embedding-cache, else None (the default);
    both, a :class:`UsageError`."""
    if args.no_embedding_cache:
        refuse_unused(
            {"--embedding-cache": args.embedding_cache},
            "with --no-embedding-cache, which keeps no embeddings",
        )
        return False
    return args.embedding_cache


def add_first_stage_argument(
    parser: Any, *, default: str | None = "auto", when: str = "", old: str | None = None
) -> None:
    """``--first-stage``: where the candidates of a BEIR-layout collection come from
    (``when``: the help's first words; ``old``: an earlier spelling, still accepted)."""
    parser.add_argument(
        "--first-stage",
        default=default,
        help=f"{when}auto (the dataset's *.run.trec when it ships one, else bm25; the default), "
        "bm25 (over the corpus), run, or your retriever's output: a TREC run file or JSON "
        "Lines candidates (a row a query, .jsonl or any name: {query_id, candidates: [{id, "
        "first_stage_score}]})",
    )
    if old:
        add_old_spelling(parser, old, dest="first_stage", now="--first-stage")


def add_max_queries_argument(parser: Any, *, old: str | None = None) -> None:
    """``--max-queries N``: only a collection's first N queries (``old``: an earlier
    spelling, still accepted)."""
    parser.add_argument(
        "--max-queries",
        type=positive_int,
        default=None,
        metavar="N",
        help="use the first N queries only",
    )
    if old:
        add_old_spelling(parser, old, dest="max_queries", now="--max-queries", type=positive_int)


def metrics_argument(value: str) -> list[str]:
    """``--metrics``: :func:`~rerankit.eval.metrics.parse_metrics`' names; a mistake is a
    usage error in the library's words."""
    from ..eval.metrics import parse_metrics  # (not while the parser is built)

    try:
        return parse_metrics(value)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_metrics_argument(parser: Any, where: str, stays: str) -> None:
    """``--metrics NAME@K[,...]`` (``eval``'s, and ``tune``'s for its test-split report):
    more metrics reported ``where``, beside the usual ones; ``stays``: what is still
    decided on nDCG@10 alone."""
    parser.add_argument(
        "--metrics",
        type=metrics_argument,
        default=None,
        metavar="LIST",
        help=f"more metrics to report {where}beside nDCG@10, MRR@10, recall@10 and recall at "
        "the candidates' depth, comma-separated NAME@K (the cut-off K in ranks): ndcg, mrr, "
        "recall, precision, map, e.g. ndcg@5,precision@5,map@100 (as trec_eval counts "
        f"them; {stays} stay on nDCG@10)",
    )


def add_no_progress_argument(parser: Any, default: str | None = None) -> None:
    """``--no-progress``: no progress on stderr (:func:`~rerankit.cli.console.progress_bar`;
    ``default`` words a command's own progress)."""
    default = default or "default: a bar on a terminal, else a line now and then, as in a log file"
    parser.add_argument(
        "--no-progress", action="store_true", help=f"print no progress on stderr ({default})"
    )


def add_data_argument(parser: Any, *, required: bool = True, also: str = "") -> None:
    """``--data FOLDER``: the BEIR-layout collection a learning command reads (``also``:
    what else it may name)."""
    parser.add_argument(
        "--data",
        required=required,
        help="BEIR-layout folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv (see "
        f"`rerankit eval -h`){also}",
    )
