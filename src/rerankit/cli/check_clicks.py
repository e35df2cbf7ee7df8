"""``rerankit check --clicks LOG``: a click log read as learning reads it, its problems
named by file and line, before the slow ``tune --clicks`` (the library's
:func:`~rerankit.training.clicks.checking.check_log` does the work)."""

from __future__ import annotations

import argparse

from ..training.clicks.checking import check_log
from .args import UsageError
from .clicks import need_click_log
from .files import need_file

__all__ = ["need_click_flags", "report_clicks"]


def need_click_flags(args: argparse.Namespace) -> None:
    """Usage errors of ``check``'s ``--clicks`` and ``--data``, before any work."""
    if args.data and not args.clicks:
        raise UsageError("--data is the corpus of a click log: it goes with --clicks LOG")
    if not args.clicks:
        return
    moving = (args.model, args.backend, args.quantize)
    if not args.files and (args.reranker is not None or any(moving)):
        raise UsageError(
            "--reranker, --model, --backend and --quantize check a pipeline or settings "
            "file, not a click log: name the file too, or leave them out"
        )
    for log in args.clicks:
        need_click_log(log, "--clicks")
    need_file(args.data, "--data", "the corpus of the click log, a folder or its file")


def report_clicks(logs: list[str], data: str | None) -> int:
    """Print what ``check_log`` found in ``logs`` (with ``data``'s corpus); 1 when it
    found a mistake."""
    found = check_log(logs, data=data)
    print(found.describe())
    if found.mistakes():
        return 1
    flags = " ".join(f"--clicks {log}" for log in logs) + (f" --data {data}" if data else "")
    # the file name the pages and simulate-clicks use (tune's own default: tuned-clicks.toml)
    print(f"ok: learn from it with rerankit tune {flags} --out learned.toml")
    return 0
