"""MkDocs hooks: the README is the site's front page (its links into ``docs/`` made
site-relative), and the CLI reference is generated from the command line's own parsers, so
it can never drift from them."""

from __future__ import annotations

import argparse
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]


def on_files(files, config):
    """Add ``index.md`` (the README) to the site."""
    files.append(File.generated(config, "index.md", content=_front_page()))
    return files


def _front_page() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return text.replace("](docs/", "](").replace("[`docs/`](docs/)", "`docs/`")


def on_page_markdown(markdown, page, config, files):
    """Fill the CLI page's reference from ``rerankit.cli.build_parser``."""
    if page.file.src_uri == "cli.md":
        return markdown.replace("<!-- cli-reference -->", cli_reference())
    return markdown


def cli_reference() -> str:
    from rerankit.cli import build_parser

    parser = build_parser()
    out = ["## Reference", "", "Generated from the command line's own parsers.", ""]
    for action in parser._subparsers._group_actions:  # the subcommands, in help order
        for name, sub in action.choices.items():
            out += [f"### `rerankit {name}`", "", "```text", _help(sub), "```", ""]
    return "\n".join(out)


def _help(parser: argparse.ArgumentParser) -> str:
    formatter = argparse.HelpFormatter(parser.prog, width=88)
    parser.formatter_class = lambda prog: formatter
    return parser.format_help().rstrip()
