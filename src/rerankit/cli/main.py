"""The ``rerankit`` command line: the parser's root, and :func:`main`."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .. import __version__
from ..errors import InputError, RerankitError, flags_first
from ..plugins import PLUGINS_ENV, load_environment, load_plugins
from .args import UsageError, examples
from .parser import CommandParser
from .parsers import batch, clicks, label, models, precompute, rank, serve, train, tune
from .parsers import eval as eval_commands

__all__ = ["PLUGIN_COMMANDS", "build_parser", "main"]

#: the commands that build pipelines, so take ``--plugin``
PLUGIN_COMMANDS = (
    "rank",
    "batch",
    "rerankers",
    "check",
    "eval",
    "tune",
    "simulate-clicks",
    "serve",
    "precompute",
)


# Each command's code, and the library it calls, is imported when the command runs:
# building the parser imports none of it, so `--help` and `--version` answer at once.


def _rank(args: Any) -> int:
    from .rank import cmd_rank

    return cmd_rank(args)


def _batch(args: Any) -> int:
    from .batch import cmd_batch

    return cmd_batch(args)


def _rerankers(args: Any) -> int:
    from .models import cmd_rerankers

    return cmd_rerankers(args)


def _check(args: Any) -> int:
    from .check import cmd_check

    return cmd_check(args)


def _cache(args: Any) -> int:
    from .models import cmd_cache

    return cmd_cache(args)


def _export(args: Any) -> int:
    from .export import cmd_export

    return cmd_export(args)


def _eval(args: Any) -> int:
    from .eval import cmd_eval

    return cmd_eval(args)


def _tune(args: Any) -> int:
    from .tune import cmd_tune

    return cmd_tune(args)


def _simulate_clicks(args: Any) -> int:
    from .clicks import cmd_simulate_clicks

    return cmd_simulate_clicks(args)


def _interleave_report(args: Any) -> int:
    from .clicks import cmd_interleave_report

    return cmd_interleave_report(args)


def _train(args: Any) -> int:
    from .train import cmd_train

    return cmd_train(args)


def _label(args: Any) -> int:
    from .label import cmd_label

    return cmd_label(args)


def _precompute(args: Any) -> int:
    from .precompute import cmd_precompute

    return cmd_precompute(args)


def _serve(args: Any) -> int:
    from .serve import cmd_serve

    return cmd_serve(args)


#: what each command runs (``args.func``)
RUNS: dict[str, Callable[[Any], int]] = {
    "rank": _rank,
    "batch": _batch,
    "rerankers": _rerankers,
    "check": _check,
    "cache": _cache,
    "export": _export,
    "eval": _eval,
    "tune": _tune,
    "simulate-clicks": _simulate_clicks,
    "interleave-report": _interleave_report,
    "train": _train,
    "label": _label,
    "precompute": _precompute,
    "serve": _serve,
}


def build_parser() -> CommandParser:
    """The parser of every command (flags spelled in full, never abbreviated)."""
    parser = CommandParser(
        prog="rerankit",
        description="Rerank search candidates so the most relevant come first.",
        **examples(
            'rerankit rank -q "solar power" -i docs.jsonl --top-k 10',
            "rerankit eval --data my-data",
            "rerankit serve --port 8080",
            intro="examples (`rerankit COMMAND --help` shows each command's):",
        ),
    )
    parser.add_argument("--version", action="version", version=f"rerankit {__version__}")
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="log progress to stderr (-vv for debug)"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    rank.add_commands(sub)
    batch.add_commands(sub)
    models.add_commands(sub)
    eval_commands.add_commands(sub)
    tune.add_commands(sub)
    clicks.add_commands(sub)
    train.add_commands(sub)
    label.add_commands(sub)
    precompute.add_commands(sub)
    serve.add_commands(sub)
    for command, run in RUNS.items():  # `cache info` and `cache clear` run cache's
        sub.choices[command].set_defaults(func=run)
    for command in PLUGIN_COMMANDS:
        sub.choices[command].add_argument(
            "--plugin",
            action="append",
            default=[],
            metavar="MODULE",
            help="import MODULE (a module name on the Python path, or a .py file) first: "
            "the scorers, rules and rerankers it registers can then be named; repeatable "
            f"(${PLUGINS_ENV}=a,b names them for every command and the service)",
        )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command ``argv`` (default: the process's arguments) names; the library's
    messages name its options by their flags (:func:`~rerankit.errors.flags_first`), except
    what ``serve``'s service answers its clients."""
    with flags_first():  # also while parsing: a flag's type may raise a library message
        parser = build_parser()
        args = parser.parse_args(argv)
    if args.command == "serve":  # the service's answers are for its clients, not a shell
        return _run(parser, args, argv)
    with flags_first(args.command):
        return _run(parser, args, argv)


def _run(parser: CommandParser, args: Any, argv: Sequence[str] | None) -> int:
    args.argv = list(sys.argv[1:] if argv is None else argv)  # to say how to run it again
    if args.verbose:
        logging.basicConfig(
            level=logging.DEBUG if args.verbose > 1 else logging.INFO,
            format="%(levelname)s %(name)s: %(message)s",
        )
    if args.command is None:
        parser.print_help()
        return 2
    try:
        load_environment()  # your registered names, before anything is built
        load_plugins(getattr(args, "plugin", []), "--plugin")
        if args.command == "serve":  # the service logs it, as it logs the rest
            return args.func(args)
        from .console import export_notes  # with the command's code, not the parser's

        with export_notes():  # a model's export on first use, said as it starts
            return args.func(args)
    # every error a command prints names it, as argparse's usage errors do (``rerankit rank:
    # error: ...``): a usage error exits 2, a problem with the input, the data or a file 1
    except UsageError as exc:  # flags that cannot go together
        if sys.stderr is not None:
            print(f"rerankit {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except (InputError, ValueError, TypeError, RerankitError, FileNotFoundError) as exc:
        if sys.stderr is not None:
            print(f"rerankit {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # e.g. `rerankit rank ... | head`
        return 0
    except OSError as exc:  # a closed or failing standard stream
        if sys.stderr is not None:
            print(f"rerankit {args.command}: error: {exc.strerror or exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
