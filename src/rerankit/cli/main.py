"""The ``rerankit`` command line: the parser's root, and :func:`main`."""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from typing import Any

from .. import __version__
from ..errors import InputError, RerankitError, flags_first
from ..plugins import PLUGINS_ENV, load_environment, load_plugins
from . import batch, clicks, label, models, precompute, rank, serve, train, tune
from . import eval as eval_commands
from .args import UsageError, examples
from .console import export_notes
from .parser import CommandParser

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
