"""What to run after ``rerankit train``: the command that says whether the trained model
beats the default ``hybrid``, on judged queries the training never saw."""

from __future__ import annotations

import shlex
from pathlib import Path

from ..errors import InputError, keyword_flag

__all__ = ["against_default", "check_train_split", "tune_splits", "unseen_half"]


def check_train_split(data: str | Path, split: str) -> None:
    """Refuse a training ``split`` the folder ``data`` has no judgments for, saying the way
    out: with the test split alone, train on half of its queries (``test:odd``) and measure
    on the other half; else the splits it has. Folders and splits it cannot read are left
    to reading the folder, which says what is wrong with them."""
    data = Path(data)
    name = split.partition(":")[0]
    if "," in name or name == "all" or not data.is_dir():
        return
    if (data / "qrels" / f"{name}.tsv").is_file():
        return
    found = sorted(p.stem for p in (data / "qrels").glob("*.tsv"))
    if not found:
        return  # no judgments at all: reading the folder says so
    if found == ["test"]:
        half = keyword_flag("train_split", "test:odd")
        raise InputError(
            f"{data}: no qrels/{name}.tsv to train on (splits found: test); with one judged "
            f"split, train on half of its queries, {half}, and measure the model on the "
            f"other half, {unseen_half('test:odd')}"
        )
    named = keyword_flag("train_split")
    raise InputError(
        f"{data}: no qrels/{name}.tsv to train on (splits found: {', '.join(found)}); "
        f"name the one to train on with {named}"
    )


def against_default(
    what: str, data: str | Path, out: str | Path, candidates: int = 100, split: str = "train"
) -> str:
    """The command that says whether the model trained into ``out`` from ``data``'s
    ``split`` does better than the default ``hybrid`` (the held-out check compares it with
    BM25 and the model it started from only): for a cross-encoder, ``rerankit eval`` of both
    on judged queries it never saw (``data``'s test split when it has one, the other half
    when it trained on half of that split: ``test:odd`` is reported on ``test:even``); for
    an embedding model, ``rerankit tune`` of a ranker that reads it, against the default, on
    the same training split; either on the ``candidates`` the training drew from (said when
    not the commands' default, 100)."""
    depth = f" --candidates {candidates}" if candidates != 100 else ""
    unseen = unseen_half(split)
    if what == "cross_encoder":
        has_test = (Path(data) / "qrels" / "test.tsv").is_file()
        folder = shlex.quote(str(data)) if has_test else "FOLDER"
        where = (
            f"on {data}'s {unseen} queries (the half of the test split it did not train on)"
            if unseen
            else f"on {data}'s test split"
            if has_test
            else "on judged test queries (a FOLDER with qrels/test.tsv)"
        )
        on_split = f" --split {unseen}" if unseen else ""
        return (
            f"does it beat the default? `rerankit eval --data {folder}{on_split} --rerankers "
            f"hybrid,{shlex.quote(as_path(out))} --baseline hybrid{depth}` measures both {where}"
        )
    splits = tune_splits(split)
    return (
        f"does it beat the default? `rerankit tune --data {shlex.quote(str(data))}{splits} "
        f"--method ltr --embedding-model {shlex.quote(as_path(out))}{depth} --out tuned.toml` "
        "measures a ranker reading it against the default hybrid"
    )


def as_path(folder: str | Path) -> str:
    """``folder`` as a printed command should show it: a relative one as ``./my-ce``, so
    that a reader (and ``-r``) takes it for a path, not a registered name."""
    text = str(folder)
    return text if Path(text).is_absolute() or text.startswith((".", "~")) else f"./{text}"


def unseen_half(split: str) -> str:
    """The other half of the test split when ``split`` is one half (``test:odd`` gives
    ``test:even``), the queries a model trained on it never saw; else ``""`` (another
    split's model is measured on the test split)."""
    base, _, half = split.rpartition(":")
    if base != "test" or half not in ("odd", "even"):
        return ""
    return f"test:{'even' if half == 'odd' else 'odd'}"


def tune_splits(split: str) -> str:
    """``rerankit tune``'s split flags that learn on ``split``, as training did, and report
    on queries it never saw (``""`` for the usual train and test)."""
    flags = f" --train-split {shlex.quote(split)}" if split != "train" else ""
    unseen = unseen_half(split)
    return flags + (f" --test-split {unseen}" if unseen else "")
