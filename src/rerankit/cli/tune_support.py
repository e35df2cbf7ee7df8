"""What ``rerankit tune`` checks before the work and how it writes its pipeline file."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..config import to_toml
from ..errors import InputError

__all__ = ["check_out", "check_train_split", "write_pipeline"]


def write_pipeline(args: argparse.Namespace, default: str, spec: Any, comment: str) -> Path:
    """A pipeline file at ``--out`` (or ``default``), announced."""

    out = Path(args.out or default)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(to_toml(spec, comment), encoding="utf-8")
    print(f"\nwrote {out}")
    return out


def check_out(out: str | None) -> None:
    """Refuse an ``--out`` that could not be written or read back, before the work."""
    if out is None:
        return
    path = Path(out)
    if path.is_dir():
        raise InputError(
            f"--out {out}: is a folder; name the pipeline file, e.g. {path / 'tuned.toml'}"
        )
    if path.suffix.lower() != ".toml":
        raise InputError(
            f"--out {out}: tune writes a TOML pipeline file; give a name ending in .toml "
            f"(e.g. {path.with_suffix('.toml')})"
        )


def check_train_split(data: Path, split: str) -> None:
    """A missing training split, with the halves of an existing one as the way out."""
    name = split.partition(":")[0]
    if not data.is_dir() or (data / "qrels" / f"{name}.tsv").is_file():
        return  # load_beir says what is wrong with a folder that is not one
    found = sorted(p.stem for p in (data / "qrels").glob("*.tsv"))
    if len(found) == 1:
        raise InputError(
            f"{data}: no qrels/{name}.tsv to tune on (splits found: {found[0]}); with one "
            f"judged split, tune on half of its queries and report on the other: "
            f"--train-split {found[0]}:odd --test-split {found[0]}:even"
        )
    if found:
        raise InputError(
            f"{data}: no qrels/{name}.tsv to tune on (splits found: {', '.join(found)}); "
            "name the one to tune on with --train-split and the one to report on with "
            "--test-split"
        )
