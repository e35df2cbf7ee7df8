"""The flags of :class:`~rerankit.InputFields` (how documents are read and results written),
the same for every command that reads documents."""

from __future__ import annotations

import argparse
from typing import Any

from ..documents import InputFields
from .args import given, refuse_unused

__all__ = ["add_field_arguments", "field_list", "input_fields"]


def field_list(value: str) -> tuple[str, ...]:
    """``--text-fields``: field names separated by commas, none empty."""
    names = tuple(v.strip() for v in value.split(","))
    if not all(names):
        raise argparse.ArgumentTypeError(f"expected field names separated by commas, got {value!r}")
    return names


def add_field_arguments(parser: Any, *, score_field: bool = True) -> None:
    """The flags of :class:`~rerankit.InputFields` (how documents are read and results
    written), the same for every command that reads documents."""
    parser.add_argument(
        "--text-field",
        default="text",
        metavar="FIELD",
        help="object field holding the text (default text)",
    )
    parser.add_argument(
        "--text-fields",
        default=None,
        type=field_list,
        metavar="A,B",
        help="several fields joined as the text instead of --text-field, each a document has "
        "as a 'field: value' line, in this order (what Cohere's rank_fields asks for)",
    )
    parser.add_argument(
        "--id-field",
        default="id",
        metavar="FIELD",
        help="object field holding the id (default id; a document with _id and no id, as in "
        "a BEIR corpus.jsonl, gives its _id)",
    )
    parser.add_argument(
        "--title-field",
        default="title",
        metavar="FIELD",
        help="object field holding the title, read on the line before the text exactly as a "
        "'title' field is (default title; e.g. --title-field headline --text-field body)",
    )
    if score_field:
        parser.add_argument(
            "--score-field",
            default="rerank_score",
            metavar="FIELD",
            help="field added to each output object (default rerank_score)",
        )
    parser.add_argument(
        "--first-stage-field",
        default=None,
        metavar="FIELD",
        help="object field holding the first-stage (retriever) score, for pipelines that read "
        "it: a field scorer, pipelines written by `rerankit tune`, learned rankers (the default "
        "hybrid ranks by the texts and fuses it only with first_stage_weight); a "
        "'first_stage_score' field is read without naming it",
    )
    parser.add_argument(
        "--first-stage-lower-is-better",
        action="store_true",
        help="the first-stage field is a distance or rank: lower is better (in Python, "
        "first_stage_higher_is_better=False: the same switch, named by its default)",
    )


def input_fields(args: argparse.Namespace) -> InputFields:
    """The :class:`~rerankit.InputFields` the flags of :func:`add_field_arguments` give."""
    if args.text_fields and args.text_field != InputFields.text_field:
        refuse_unused({"--text-field": args.text_field}, "with --text-fields, which names the text")
    if args.text_fields:  # it reads each field as a line, a title too
        refuse_unused(given(args, "title_field"), "with --text-fields, which names the text")
    return InputFields(
        text_field=args.text_field,
        text_fields=args.text_fields,
        id_field=args.id_field,
        title_field=args.title_field,
        score_field=getattr(args, "score_field", InputFields.score_field),
        first_stage_field=args.first_stage_field,
        first_stage_higher_is_better=not args.first_stage_lower_is_better,
    )
