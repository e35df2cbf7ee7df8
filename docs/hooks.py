"""MkDocs hooks: the README is the site's front page and CONTRIBUTING.md its contributing
page (their links into ``docs/`` made site-relative), and the CLI reference is generated
from the command line's own parsers, so it can never drift from them."""

from __future__ import annotations

import argparse
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]


#: pages made from files outside ``docs/``: site page -> the repository file
GENERATED = {"index.md": "README.md", "contributing.md": "CONTRIBUTING.md"}


def on_files(files, config):
    """Add ``index.md`` (the README) and ``contributing.md`` (CONTRIBUTING.md) to the site."""
    for page, source in GENERATED.items():
        files.append(File.generated(config, page, content=site_page(source)))
    return files


def site_page(source: str) -> str:
    """A repository file's Markdown with its links made site-relative."""
    text = (ROOT / source).read_text(encoding="utf-8")
    for name, page in (("README.md", "index.md"), ("CONTRIBUTING.md", "contributing.md")):
        text = text.replace(f"]({name})", f"]({page})").replace(f"]({name}#", f"]({page}#")
    return text.replace("](docs/", "](")


def on_page_markdown(markdown, page, config, files):
    """Fill the CLI page's reference from ``rerankit.cli.build_parser``, and point a page's
    links to ``../README.md`` and ``../CONTRIBUTING.md`` (right when reading the repository)
    at their site pages."""
    if page.file.src_uri == "cli.md":
        markdown = markdown.replace("<!-- cli-reference -->", cli_reference())
    for page_name, source in GENERATED.items():
        markdown = markdown.replace(f"](../{source})", f"]({page_name})")
        markdown = markdown.replace(f"](../{source}#", f"]({page_name}#")
    return markdown


def cli_reference() -> str:
    from rerankit.cli import build_parser

    parser = build_parser()
    out = ["Generated from the command line's own parsers when the site is built.", ""]
    for action in parser._subparsers._group_actions:  # the subcommands, in help order
        for name, sub in action.choices.items():
            out += [f"### `rerankit {name}`", "", "```text", _help(sub), "```", ""]
    return "\n".join(out)


def _help(parser: argparse.ArgumentParser) -> str:
    """``parser``'s help as ``--help`` prints it (its own formatter: examples one a line),
    at a fixed width so the page does not depend on the terminal that built it."""
    own = parser.formatter_class
    parser.formatter_class = lambda prog: own(prog, width=88)
    try:
        return parser.format_help().rstrip()
    finally:
        parser.formatter_class = own
