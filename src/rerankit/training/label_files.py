"""The files of a label folder (:mod:`.labelling`): the labels as ``qrels/<split>.tsv``,
the queries, the report and the corpus, each written atomically, and the labels an earlier
run wrote there."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..eval.data import Dataset
from .label_candidates import LABEL_REPORT

__all__ = ["link_corpus", "replace_file", "write_labels", "written_labels"]


def replace_file(path: Path, text: str) -> None:
    """``path`` replaced atomically (a reader never sees half a file)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def write_labels(
    out: Path,
    split: str,
    data: Dataset,
    qrels: Mapping[str, Mapping[str, int]],
    report: Mapping[str, Any],
) -> None:
    """The folder, each file replaced atomically: qrels, queries and the report."""
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    rows = [f"{q}\t{d}\t{g}" for q, docs in qrels.items() for d, g in docs.items()]
    replace_file(
        out / "qrels" / f"{split}.tsv",
        "query-id\tcorpus-id\tscore\n" + "".join(r + "\n" for r in rows),
    )
    replace_file(
        out / "queries.jsonl",
        "".join(json.dumps({"_id": q, "text": data.queries[q]}) + "\n" for q in qrels),
    )
    replace_file(out / LABEL_REPORT, json.dumps(report, indent=2) + "\n")


def written_labels(path: Path) -> dict[str, dict[str, int]]:
    """The labels an earlier run wrote to ``path`` (a ``qrels/<split>.tsv`` of
    :func:`write_labels`): query id -> doc id -> grade; empty when there is none."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()[1:]  # after the header
    except (OSError, ValueError):
        return {}
    labels: dict[str, dict[str, int]] = {}
    for line in lines:
        fields = line.split("\t")
        if len(fields) == 3 and fields[2].lstrip("-").isdigit():
            labels.setdefault(fields[0], {})[fields[1]] = int(fields[2])
    return labels


def link_corpus(out: Path, data: Dataset, source: Path | None) -> None:
    """``out/corpus.jsonl``: a link to ``source``'s corpus (a copy where links cannot be
    made), else written from ``data``; left as it is when there is one."""
    target = out / "corpus.jsonl"
    if target.exists() or target.is_symlink():
        return
    if source is not None and (source / "corpus.jsonl").is_file():
        try:
            target.symlink_to((source / "corpus.jsonl").resolve())
            return
        except OSError:  # no symlinks here: a copy
            shutil.copyfile(source / "corpus.jsonl", target)
            return
    rows = ({"_id": d, **doc} for d, doc in data.corpus.items())
    target.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
