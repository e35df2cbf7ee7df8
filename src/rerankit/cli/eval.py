"""``rerankit eval`` and ``rerankit tune`` (in :mod:`.tune`): the commands and their
arguments (``rerankit train`` is in :mod:`.train`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..batch import quiet_ray_logs
from ..errors import InputError
from ..eval.compare import check_baseline, format_against, format_summary_against
from ..eval.data import TITLES, find_collections
from ..eval.first_stage import first_stage
from ..eval.runner import (
    check_output_folder,
    describe_pipeline,
    evaluate_runs,
    format_summary,
    format_table,
    write_outputs,
    write_summary,
)
from .args import add_language_argument, positive_float, positive_int
from .eval_support import (
    add_embedding_cache_arguments,
    named_pipelines,
    pipeline_runs,
    read_collection,
    use_embedding_cache,
)
from .tune import cmd_tune

__all__ = ["add_commands"]

#: what the heading of ``rerankit eval --titles`` says of each form but ``field``
TITLE_WORDS = {
    "newline": "joined to the text by a newline",
    "space": "joined to the text by a space",
    "period": "joined to the text by '. '",
    "drop": "left out",
}


def _layouts(titles: str) -> list[str]:
    """``--titles``' comma-separated layouts, each checked, in order, without repeats."""
    layouts = list(dict.fromkeys(t.strip() for t in titles.split(",") if t.strip()))
    wrong = [t for t in layouts if t not in TITLES]
    if wrong or not layouts:
        raise InputError(
            f"--titles {titles!r}: expected one or more of {', '.join(TITLES)}, separated by commas"
        )
    return layouts


def _titles_note(layouts: Sequence[str]) -> str:
    """What the heading says of ``--titles`` (nothing for the default)."""
    if len(layouts) > 1:
        return f"; each reranker once per title layout ({', '.join(layouts)})"
    return "" if layouts[0] == "field" else f"; titles: {TITLE_WORDS[layouts[0]]}"


def _run_name(name: str, layout: str, layouts: Sequence[str]) -> str:
    """A pipeline's name in the tables: with its title layout when there are several."""
    return name if len(layouts) == 1 else f"{name} ({layout})"


def _source_label(data: Any, source: str) -> str:
    """What the first stage of ``data`` is, in words (``auto`` resolved)."""
    if source == "auto":
        source = "run" if data.run_scores is not None else "bm25"
    if source == "bm25":
        return "BM25 over the corpus (k1=0.9, b=0.4)"
    if source == "run":
        return f"the dataset's run ({data.run_file})" if data.run_file else "the dataset's run"
    return source


def _without_candidates(data: Any, cands: Mapping[str, Sequence[Any]]) -> int:
    """How many of the queries the first stage found nothing for (they score 0)."""
    return sum(1 for q in data.queries if not cands.get(q))


def _labels(collections: list[tuple[Path, str]], split: str) -> list[str]:
    """A short, unique label per collection: its folder name, with its split when that is
    not the command's ``--split`` or when two share a name."""
    names = [p.name for p, _ in collections]
    return [
        name if s == split and names.count(name) == 1 else f"{name}@{s}"
        for name, (_, s) in zip(names, collections, strict=True)
    ]


def cmd_eval(args: argparse.Namespace) -> int:
    if args.engine == "ray" and not getattr(args, "verbose", 0):
        quiet_ray_logs()
    collections = find_collections(args.data, args.split)
    if args.out:
        check_output_folder(args.out)  # before the work, not after it
    use_embedding_cache(args)
    pipelines = named_pipelines(args.rerankers, args.config or [], args.language)
    layouts = _layouts(args.titles)
    names = [_run_name(n, t, layouts) for t in layouts for n, _, _ in pipelines]
    baseline = None
    if args.baseline is not None:
        baseline = check_baseline(args.baseline, ["first stage", *names])
    several = len(collections) > 1
    summary = []
    for label, (path, split) in zip(_labels(collections, args.split), collections, strict=True):
        data = read_collection(path, split, args.max_queries)
        cands = first_stage(data, args.first_stage, args.k)
        runs = []
        for layout in layouts:  # after the first stage: every layout, the same candidates
            shown = data.with_titles(layout)
            mine = pipeline_runs(args, shown, cands, pipelines, texts_only=args.texts_only)
            for run in mine[1:]:
                run.name = _run_name(run.name, layout, layouts)
            runs += mine if not runs else mine[1:]
        rows = evaluate_runs(data, runs, args.k)
        source_label = _source_label(data, args.first_stage)
        empty = _without_candidates(data, cands)
        print(
            f"{data.name}, {split} split, {len(data.queries)} queries"
            + (f", {empty} with no candidates (they score 0)" if empty else "")
            + f"; first stage: {source_label}, top {args.k}"
            + ("; rerankers see texts only (no first-stage scores)" if args.texts_only else "")
            + _titles_note(layouts)
            + "\n"
        )
        print(format_table(rows, args.k))
        if baseline is not None:
            print("\n" + format_against(rows, baseline))
        if several:
            print()
        meta = {
            "dataset": data.name,
            "split": split,
            "first_stage": source_label,
            "k": args.k,
            "queries": len(data.queries),
            "queries_without_candidates": empty,
            "first_stage_scores_given": not args.texts_only,
            "titles": layouts[0] if len(layouts) == 1 else layouts,
            "baseline": baseline,
            "pipelines": {name: describe_pipeline(r) for name, r, _ in pipelines},
        }
        if args.out:
            folder = Path(args.out) / label if several else Path(args.out)
            for written in write_outputs(folder, rows, runs, meta):
                print(f"wrote {written}", file=sys.stderr)
        summary.append({"collection": label, **meta, "rows": rows})
    if several:
        print(format_summary(summary))
        if baseline is not None:
            print("\n" + format_summary_against(summary, baseline))
        if args.out:
            written = write_summary(args.out, summary)
            print(f"wrote {written}", file=sys.stderr)
    return 0


def add_commands(sub: Any) -> None:
    ev = sub.add_parser(
        "eval",
        help="evaluate rerankers on a BEIR-layout dataset",
        description="Rerank each query's first-stage candidates with every reranker given and "
        "report nDCG@10, MRR@10, Recall@10 and Recall@k (relevance >= 1 counts), latency and LLM "
        "usage, with a paired t-test against the first stage. Data: a folder with corpus.jsonl "
        "({_id, title, text}), queries.jsonl ({_id, text}), qrels/<split>.tsv (query-id, "
        "corpus-id, score) and optionally a TREC run file *.run.trec.",
    )
    ev.add_argument(
        "--data",
        required=True,
        action="append",
        help="folder with corpus.jsonl, queries.jsonl, qrels/<split>.tsv, or a folder of "
        "such folders; repeatable (a table per collection, then one row each and the mean); "
        "PATH@SPLIT evaluates that collection on another split",
    )
    ev.add_argument(
        "--split",
        default="test",
        help="qrels split to evaluate (default test); SPLIT:odd / SPLIT:even keep the "
        "queries at odd / even positions in queries.jsonl",
    )
    ev.add_argument(
        "--first-stage",
        default="auto",
        help="auto (the dataset's *.run.trec when it ships one, else bm25; the default), "
        "bm25 (over the corpus), run, or a TREC run file",
    )
    ev.add_argument(
        "--rerankers",
        default="bm25,embedding,hybrid",
        help="comma-separated names or pipeline files (default bm25,embedding,hybrid)",
    )
    add_language_argument(ev)
    ev.add_argument("--config", action="append", help="a pipeline file (repeatable)")
    ev.add_argument(
        "--k", type=positive_int, default=100, help="candidates per query (default 100)"
    )
    ev.add_argument("--out", help="folder for results.json, TREC runs and a chart")
    ev.add_argument(
        "--max-queries", type=positive_int, default=None, help="evaluate the first N only"
    )
    ev.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    ev.add_argument(
        "--texts-only",
        action="store_true",
        help="give the rerankers the candidates' texts without their first-stage scores "
        "(as a Cohere-style request would)",
    )
    ev.add_argument(
        "--baseline",
        default=None,
        metavar="NAME",
        help="also compare every pipeline with this one (one of --rerankers, or 'first "
        "stage'): the paired difference in nDCG@10 over the same queries, its standard "
        "error and p-value, per collection and, over several, one row each and the mean",
    )
    ev.add_argument(
        "--titles",
        default="field",
        metavar="LAYOUTS",
        help="how the rerankers get each candidate's title: as a title field (field, the "
        "default), joined to the text by a newline, a space or '. ' (newline, space, "
        "period), as a caller sending one string per document would, or left out (drop); "
        "several, comma-separated, run every reranker once per layout ('hybrid (space)') "
        "over the same candidates, to see how much the layout matters",
    )
    add_embedding_cache_arguments(ev)
    ev.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="local: rerank in this process (default); ray: on Ray Data actors (extra ray; "
        "for large evaluations, see `rerankit batch`)",
    )
    ev.add_argument("--workers", type=positive_int, default=1, help="ray: actors (default 1)")
    ev.add_argument("--address", default=None, help="ray: cluster address (default: local)")
    ev.set_defaults(func=cmd_eval)

    tu = sub.add_parser(
        "tune",
        help="fit a pipeline to your judgments, keeping it only when it beats the default",
        description="Fit a pipeline on the training split: fusion weights of the first-stage "
        "score, BM25 over the candidates and the embedding (weighted min-max, weighted z-score "
        "and RRF; a 0.1 grid), or with --calibrate the calibrated hybrid's weights, or with "
        "--method ltr a LightGBM ranker. Settings are chosen by k-fold cross-validation over "
        "the training queries (folds by query, nested so the estimate is honest) and compared "
        "with the default on the same folds; when the learned pipeline does not beat the "
        "default by more than twice the noise of that comparison, the default is written instead "
        "(--keep-learned writes the learned one anyway). A learning curve says whether more "
        "judgments would help. The written pipeline is then reported once on the test split, "
        "which never informs the choice.",
    )
    tu.add_argument("--data", required=True, help="BEIR-layout folder (see `rerankit eval -h`)")
    tu.add_argument(
        "--train-split",
        default="train",
        help="split to choose on (default train); SPLIT:odd / SPLIT:even for half of a split's "
        "queries (by position in queries.jsonl)",
    )
    tu.add_argument(
        "--test-split",
        default="test",
        help="split to report on (default test); it may not share a query with the training "
        "split. Without it (labels made by `rerankit label`, say) the report is skipped",
    )
    tu.add_argument(
        "--test-data",
        help="report on this folder's --test-split instead (e.g. the judged collection "
        "whose training queries `rerankit label` labelled)",
    )
    tu.add_argument(
        "--first-stage",
        default="auto",
        help="auto (the dataset's run when it ships one, else bm25), bm25, run, or a TREC run",
    )
    tu.add_argument(
        "--k", type=positive_int, default=100, help="candidates per query (default 100)"
    )
    tu.add_argument(
        "--strategies",
        default="first_stage,bm25,embedding",
        help="signals to fuse, two or more of first_stage, bm25, embedding",
    )
    tu.add_argument("--out", help="TOML pipeline file to write (default tuned-<dataset>.toml)")
    add_embedding_cache_arguments(tu)
    tu.add_argument(
        "--embedding-model",
        default=None,
        help="embedding model (hub id or folder, e.g. from `rerankit train embedding`) for "
        "the fusion, calibration or features; written into the pipeline file "
        "(default: the bundled all-MiniLM-L6-v2)",
    )
    tu.add_argument(
        "--embedding-max-length",
        type=int,
        default=None,
        help="tokens the embedding model reads per document (MiniLM: 256 unless set)",
    )
    tu.add_argument(
        "--method",
        choices=("fusion", "ltr"),
        default="fusion",
        help="fusion: search fusion weights (default); ltr: train a LightGBM ranker over "
        "rerankit's signals (extra learn)",
    )
    tu.add_argument(
        "--unjudged",
        choices=("auto", "negative", "skip"),
        default="auto",
        help="ltr: candidates the training qrels do not name are non-relevant (negative, "
        "as in most judged collections) or left out of training and of the "
        "cross-validation's nDCG (skip: right for labels that judged only each query's top "
        "few); auto (default): skip for a folder written by `rerankit label`, else negative",
    )
    tu.add_argument(
        "--seeds",
        type=positive_int,
        default=1,
        help="ltr: compare the settings by the mean over this many LightGBM seeds (default 1)",
    )
    tu.add_argument(
        "--folds",
        type=positive_int,
        default=5,
        help="cross-validation folds over the training queries (default 5, at least 3; "
        "fewer with fewer than two queries per fold)",
    )
    tu.add_argument(
        "--keep-learned",
        action="store_true",
        help="write the learned pipeline even when it does not beat the default by more "
        "than --adopt-margin times the cross-validation noise (by default the default "
        "pipeline is written then)",
    )
    tu.add_argument(
        "--adopt-margin",
        type=positive_float,
        default=None,
        metavar="Z",
        help="adopt the learned pipeline only when its cross-validated gain over the default "
        "is above Z times the noise (default 2)",
    )
    tu.add_argument(
        "--calibrate",
        action="store_true",
        help="instead of searching fusions, refit the calibrated texts-only hybrid (scores "
        "that estimate P(relevant) per pair) on the training split; when that does not order "
        "better than the default, keep the default's order and refit only its probabilities",
    )
    tu.add_argument(
        "--max-queries", type=positive_int, default=None, help="use the first N queries only"
    )
    tu.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    tu.set_defaults(func=cmd_tune)
