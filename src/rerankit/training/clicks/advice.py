"""What to tell whoever deploys a pipeline learned from clicks, beside what serving it asks
of the callers (:meth:`~.deploy.Written.requirements`): the name it is served under (a
client naming the pipeline that served the log reaches it only under that name), what the
verdict compared it with (the pipeline that served this log, not necessarily the one
serving today), and how to learn again once it has served traffic (``--served`` with its
file, since its name is not a registered one)."""

from __future__ import annotations

import shlex
from pathlib import Path

from ... import registry
from ..._words import counted
from ...config import read_spec
from ...errors import keyword_flag
from .deploy import Written
from .from_log import FAR_TOO_FEW, MORE_CLICKS, NEEDED_SESSIONS
from .result import ClickLearning

__all__ = ["FAR_TOO_FEW", "NEEDED_SESSIONS", "deploy_advice", "verdict"]


def verdict(learning: ClickLearning) -> str:
    """The verdict as ``rerankit tune --clicks`` prints it: :meth:`ClickLearning.describe`,
    except on a log with fewer than :data:`FAR_TOO_FEW` sessions, where it says plainly that
    they are far too few, what is kept, and about how many are needed (an adoption from so
    few is said with that caution)."""
    if learning.sessions >= FAR_TOO_FEW:
        return learning.describe()
    few = (
        f"far too few sessions for a verdict: {counted(learning.sessions, 'session')} over "
        f"{counted(learning.queries, 'query', 'queries')} with a click"
    )
    needed = (
        f"about {NEEDED_SESSIONS:,} are needed (hundreds of queries with about a hundred "
        f"sessions each): {MORE_CLICKS}"
    )
    if learning.adopt:  # beat the noise on so few: said, with how little it rests on
        return f"{learning.describe()}; but {few}, so it may be luck: {needed}"
    if learning.booster is not None:  # keep_learned
        return f"{few}; not adopted: the learned ranker is fitted anyway, as asked; {needed}"
    return f"{few}; not adopted: what served the log is kept; {needed}"


def deploy_advice(
    written: Written,
    served_by: str | None,
    *,
    served: str | None = None,
    data: str | None = None,
) -> list[str]:
    """One sentence for each thing to know before serving ``written`` (none when it is not
    the learned pipeline: what served the log is written back, served as before).
    ``served_by``: the pipeline that served the log, as the log names it (the name its
    clients sent); ``served``: ``--served`` (a file or registered name), which the
    comparison's command loads instead when given; ``data``: the collection ``--data``
    named, shown in that command (else ``FOLDER``)."""
    if not written.learned:
        return []
    path = written.pipeline
    try:
        name = str(read_spec(path).get("name") or path.stem)
    except Exception:  # written just now; unreadable only if the disk failed since
        name = path.stem
    old = served_by or "hybrid"
    out = []
    if not served_by:  # the log names no pipeline: the clients' old name is unknown
        out.append(
            f"it is served as {name!r} (the name in {path.name}): clients that name another "
            "pipeline, and Cohere's model names unless it is the default, do not reach it; "
            f"set name in {path.name} to the name your clients send"
        )
    elif served_by != name:
        out.append(
            f"it is served as {name!r} (the name in {path.name}); clients that name "
            f"{old!r}, and those using Cohere's model names (they follow the default "
            f"pipeline), reach it only when it is served under that name or as the default: "
            f'set name = "{old}" in {path.name}, or in the service\'s settings '
            f'[pipelines.{old}] reranker = "{path.name}" (relative to the settings file), or '
            f"make it the default ([server] default = {name!r})"
        )
    out.append(
        f"the verdict compares it with what served this log ({old}; for a simulated log, "
        "the simulation's ranker), not necessarily with what you serve today: "
        + _compare(served or old, path, data)
        + f"; without judged queries, put both in front of live traffic instead: "
        f"{_interleave(old, name, path)}"
    )
    out.append(
        f"once it has served traffic, learn again from that log with "
        f"{keyword_flag('served', str(path))} (its "
        f"name, {name}, is not a registered one, so the log alone cannot name it)"
    )
    return out


def _interleave(old: str, name: str, path: Path) -> str:
    """How to interleave the learned pipeline ``name`` (its file ``path``) with ``old``,
    what serves today, in the service, and read who won."""
    return (
        f'in the service\'s settings, [pipelines.{name}] reranker = "{path.name}" and '
        f'[server] interleave = ["{old}", "{name}"] (two pipelines the service serves, '
        "with [server.feedback] on), then "
        "rerankit interleave-report on its log (docs/clicks.md, interleaving)"
    )


def _compare(first: str, path: Path, data: str | None) -> str:
    """How to compare ``first`` (what served the log) with the learned pipeline at ``path``
    on judged queries: a command that runs when both are known here, else what it needs."""
    split = _judged(Path(data)) if data else None
    folder = data if split else None
    runs = registry.canonical("reranker", first) is not None or Path(first).is_file()
    where = shlex.quote(folder) if folder else "FOLDER"
    if split and split != "test":  # eval's default split
        where += f" --split {shlex.quote(split)}"
    need = []
    if folder is None:
        need.append(
            "FOLDER: a BEIR-layout folder with judgments (corpus.jsonl, queries.jsonl, "
            "qrels/test.tsv)" + (f"; {data} is not one" if data else "")
        )
    if runs:
        command = f"rerankit eval --data {where} --rerankers {shlex.quote(f'{first},{path}')}"
    else:
        command = (
            f"rerankit eval --data {where} --first-stage RUN --rerankers {shlex.quote(str(path))}"
        )
        need.append(
            f"RUN: {first}'s rankings of FOLDER's queries as a TREC run file (the 'first "
            f"stage' row is then {first}: it is neither a registered reranker nor a "
            "pipeline file here, so eval cannot run it)"
        )
    if not need:
        return f"compare the two on judged queries first: {command}"
    return f"compare the two on judged queries first: {command}, where " + "; ".join(need)


def _judged(folder: Path) -> str | None:
    """The split ``rerankit eval --data folder`` would evaluate (``test`` when judged, else
    the first judged), or None when ``folder`` is no BEIR-layout folder with judgments."""
    if not ((folder / "corpus.jsonl").is_file() and (folder / "queries.jsonl").is_file()):
        return None
    splits = sorted(p.stem for p in (folder / "qrels").glob("*.tsv"))
    return "test" if "test" in splits else (splits[0] if splits else None)
