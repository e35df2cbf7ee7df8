"""``rerankit eval``: every reranker named over the same first-stage candidates of one or
more BEIR-layout collections, the table printed and the results written."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import registry
from ..api import load
from ..batch import quiet_ray_logs, run_pipeline_ray
from ..errors import InputError
from ..eval.compare import check_baseline, format_against, format_summary_against
from ..eval.data import TITLES, find_collections
from ..eval.first_stage import candidate_depth, depth_label, first_stage, first_stage_label
from ..eval.runner import (
    PipelineRun,
    check_output_folder,
    describe_pipeline,
    evaluate_runs,
    first_stage_run,
    format_summary,
    format_table,
    run_pipeline,
    write_outputs,
    write_summary,
)
from .args import (
    add_address_argument,
    add_backend_arguments,
    add_candidates_argument,
    add_embedding_cache_arguments,
    add_first_stage_argument,
    add_language_argument,
    add_max_queries_argument,
    add_no_progress_argument,
    examples,
    positive_int,
    refuse_unused,
    say_renamed,
    use_embedding_cache,
)
from .console import progress_bar, read_collection
from .files import need_collection, need_first_stage, need_reranker
from .pipelines import pipeline_name, pipeline_spec, refuse_model_flags

__all__ = ["add_commands"]

#: what the heading of ``rerankit eval --titles`` says of each form but ``field``
TITLE_WORDS = {
    "newline": "joined to the text by a newline",
    "space": "joined to the text by a space",
    "period": "joined to the text by '. '",
    "drop": "left out",
}


#: what `eval` compares when not told
DEFAULT_RERANKERS = "bm25,embedding,hybrid"


class RerankerList(argparse.Action):
    """``--rerankers`` (and ``--config``, its earlier spelling, given ``now``: hidden from
    ``--help``, said on stderr): a comma-separated list; given again, the lists are joined,
    so ``--rerankers bm25 --config file.toml`` evaluates both, whichever spelling."""

    def __init__(self, option_strings: Any, dest: str, *, now: str | None = None, **kwargs: Any):
        if now:
            kwargs.update(help=argparse.SUPPRESS, default=argparse.SUPPRESS)
        super().__init__(option_strings, dest, **kwargs)
        self.now = now

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None):
        if self.now:
            say_renamed(str(option_string), self.now)
        earlier = getattr(namespace, self.dest, None)
        setattr(namespace, self.dest, f"{earlier},{values}" if earlier else values)


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


def named_pipelines(
    names: str, args: argparse.Namespace | None = None
) -> list[tuple[str, Any, Any]]:
    """(label, reranker, what it was declared as) for each named reranker and file, with
    ``args``' ``--language`` (for names), ``--backend`` and ``--quantize`` applied (see
    :func:`~rerankit.cli.pipelines.pipeline_spec`); ``--backend``/``--quantize`` when none
    of them runs a model, and ``--language`` when none is a registered name, refused."""

    flags = args if args is not None else argparse.Namespace()
    files = argparse.Namespace(**{**vars(flags), "language": None})  # a file has its own
    out: list[tuple[str, Any, Any]] = []

    def label(given: str) -> str:
        """The name ``given`` is served under (a file's declared name, else its stem; see
        :func:`~rerankit.cli.pipelines.pipeline_name`), with ``-2``, ``-3``, ... when an earlier
        pipeline has it: one rule for the tables, results.json, runs/ and --baseline."""
        taken = {name for name, _, _ in out}
        name = candidate = pipeline_name(given)
        number = 1
        while candidate in taken:
            number += 1
            candidate = f"{name}-{number}"
        return candidate

    listed = [n.strip() for n in names.split(",") if n.strip()]
    refuse_model_flags(flags, listed, f"--rerankers {','.join(listed)}")
    if getattr(flags, "language", None) and not any(map(registered, listed)):
        refuse_unused(
            {"--language": flags.language},
            f"with --rerankers {','.join(listed)}: it applies to registered rerankers by "
            "name (hybrid, bm25, ...); in a pipeline file, give language on its scorers",
        )
    for name in listed:
        spec = pipeline_spec(name, files if Path(name).suffix else flags, check=False)
        out.append((label(name), load(spec), spec))
    return out


def registered(name: str) -> bool:
    """Whether ``name`` is a registered reranker's (either spelling)."""
    return registry.canonical("reranker", name) is not None


def pipeline_runs(
    args: argparse.Namespace, data: Any, cands: Any, pipelines: Any, *, texts_only: bool
) -> list[PipelineRun]:
    """The first stage's run, then each pipeline's over the same candidates (on Ray Data
    actors with ``--engine ray``)."""
    runs = [first_stage_run(cands)]
    for name, reranker, declared in pipelines:
        if args.engine == "ray":
            runs.append(
                run_pipeline_ray(
                    name,
                    declared,
                    data,
                    cands,
                    first_stage_scores=not texts_only,
                    workers=args.workers or 1,
                    address=args.address,
                )
            )
            continue
        run = run_pipeline(
            name,
            reranker,
            data,
            cands,
            progress=progress_bar(name, not args.no_progress),
            first_stage_scores=not texts_only,
        )
        if run.load_note():
            print(f"rerankit: {run.load_note()}", file=sys.stderr)
        runs.append(run)
    return runs


def cmd_eval(args: argparse.Namespace) -> int:
    if args.engine == "ray" and not getattr(args, "verbose", 0):
        quiet_ray_logs()
    if args.engine != "ray":
        refuse_unused(
            {"--workers": args.workers, "--address": args.address},
            "without --engine ray (they tell Ray's actors)",
        )
    for spec in args.data:
        need_collection(spec, what="a BEIR-layout folder, or a folder of them")
    need_first_stage(args.first_stage)
    given = [*([args.rerankers] if args.rerankers else []), *(args.reranker or [])]
    need_reranker([n.strip() for n in ",".join(given).split(",") if n.strip()])
    collections = find_collections(args.data, args.split)
    if args.out:
        check_output_folder(args.out)  # before the work, not after it
    use_embedding_cache(args)
    pipelines = named_pipelines(",".join(given) or DEFAULT_RERANKERS, args)
    layouts = _layouts(args.titles)
    names = [_run_name(n, t, layouts) for t in layouts for n, _, _ in pipelines]
    baseline = None
    if args.baseline is not None:
        baseline = check_baseline(args.baseline, ["first stage", *names])
    several = len(collections) > 1
    summary = []
    for label, (path, split) in zip(_labels(collections, args.split), collections, strict=True):
        data = read_collection(path, split, args.max_queries)
        cands = first_stage(data, args.first_stage, args.candidates)
        runs = []
        for layout in layouts:  # after the first stage: every layout, the same candidates
            shown = data.with_titles(layout)
            mine = pipeline_runs(args, shown, cands, pipelines, texts_only=args.texts_only)
            for run in mine[1:]:
                run.name = _run_name(run.name, layout, layouts)
            runs += mine if not runs else mine[1:]
        depth = candidate_depth(cands, args.candidates)
        rows = evaluate_runs(data, runs, depth)
        source_label = first_stage_label(data, args.first_stage)
        empty = _without_candidates(data, cands)
        print(
            f"{data.name}, {split} split, {len(data.queries)} queries"
            + (f", {empty} with no candidates (they score 0)" if empty else "")
            + f"; first stage: {source_label}, {depth_label(depth, args.candidates)}"
            + ("; rerankers see texts only (no first-stage scores)" if args.texts_only else "")
            + _titles_note(layouts)
            + "\n"
        )
        print(format_table(rows, depth))
        if baseline is not None:
            print("\n" + format_against(rows, baseline))
        if several:
            print()
        meta = {
            "dataset": data.name,
            "split": split,
            "first_stage": source_label,
            "k": depth,
            "queries": len(data.queries),
            "queries_without_candidates": empty,
            "first_stage_scores_given": not args.texts_only,
            "titles": layouts[0] if len(layouts) == 1 else layouts,
            "baseline": baseline,
            "pipelines": {name: describe_pipeline(r) for name, r, _ in pipelines},
            "notes": data.notes,
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
        **examples(
            "rerankit eval --data my-data  # bm25, embedding and hybrid over BM25's top 100",
            "rerankit eval --data my-data --rerankers bm25,pipeline.toml --out results",
            "rerankit eval --data my-data --first-stage my.run.trec --baseline bm25",
        ),
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
    add_first_stage_argument(ev)
    ev.add_argument(
        "--rerankers",
        action=RerankerList,
        default=None,
        help="comma-separated reranker names, pipeline files or model folders/hub ids "
        f"(default {DEFAULT_RERANKERS}; repeated, the lists are joined); a pipeline file is "
        "listed under the name it declares, else its file name, and a name listed before "
        "gets -2, -3, ...",
    )
    ev.add_argument(
        "-r",
        "--reranker",
        action="append",
        metavar="RERANKER",
        help="one reranker to evaluate, as --reranker means in the other commands; "
        "repeat it for several (added to --rerankers when that is given too)",
    )
    ev.add_argument("--config", dest="rerankers", action=RerankerList, now="--rerankers")
    add_language_argument(ev)
    add_backend_arguments(ev)
    add_candidates_argument(ev, "first-stage candidates each query's rerankers get")
    ev.add_argument("--out", help="folder for results.json, TREC runs and a chart")
    add_max_queries_argument(ev)
    add_no_progress_argument(ev)
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
        help="also compare every pipeline with this one (one of --rerankers, or "
        "first-stage): the paired difference in nDCG@10 over the same queries, its standard "
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
    ev.add_argument("--workers", type=positive_int, default=None, help="ray: actors (default 1)")
    add_address_argument(ev)
    ev.set_defaults(func=cmd_eval)
