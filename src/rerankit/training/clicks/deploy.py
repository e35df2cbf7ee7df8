"""What learning from a click log writes, and what serving it asks of the caller
(``rerankit tune --clicks LOG`` calls :func:`write_learned`): the learned pipeline when the
verdict adopts it (or it is kept as asked); otherwise what served the log when it can be
named (``served``: a pipeline file or a registered name; else the name the log carries, when
it is a registered one), and only when neither can be had the default first stage + MiniLM
fusion, saying so. Beside it: the model and its report (a learned pipeline) and the
propensities. :class:`Written` names each file and what reads it, the scale of the written
pipeline's scores and whether it reads each document's first-stage score."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ... import registry
from ...api import load
from ...config import read_pipeline, read_spec
from ...documents import FIRST_STAGE_SCORE, PASS_FIRST_STAGE
from ...errors import ConfigError, keyword_flag
from ...spec_toml import to_toml  # unchecked: its paths are read beside the file it writes
from ..fusion_search import DEFAULT_HYBRID, pipeline_spec
from .from_log import LogLearning

__all__ = ["Served", "Written", "reads_first_stage", "served_pipeline", "write_learned"]

logger = logging.getLogger(__name__)

#: the scale of the service's default pipeline (the registered ``hybrid``)
DEFAULT_SCALE = "probability"


@dataclass
class Served:
    """A pipeline to write when the learned one is not: its spec, the text to write
    (a file's own text, kept as it is) and a sentence saying which pipeline it is and why."""

    spec: dict[str, Any]
    text: str
    what: str
    #: False for the default hybrid written because what served could not be named
    served: bool = True


def _registered(name: str | None) -> str | None:
    return registry.canonical("reranker", name) if name else None


def _named(name: str, why: str) -> Served:
    spec = {"name": name, "reranker": name}
    return Served(spec, to_toml(spec, f"rerankit tune --clicks: {why}"), why)


def served_pipeline(served: str | None = None, found: LogLearning | None = None) -> Served:
    """What served the log: ``served`` (a pipeline file, or a registered reranker name),
    else the pipeline the log names for most of its sessions when that is a registered name;
    else the default first stage + MiniLM fusion, with a sentence that says it is not what
    served the log and why. A ``served`` that is neither a file nor a registered name is a
    :class:`~rerankit.errors.ConfigError`."""
    if served:
        path = Path(served)
        if path.suffix.lower() in (".toml", ".yaml", ".yml", ".json") or path.exists():
            spec = read_spec(path)  # checked: a missing or unreadable file is an error
            text = path.read_text(encoding="utf-8")
            return Served(read_pipeline(path), text, f"the pipeline that served the log ({served})")
        name = _registered(served)
        if name is None:
            names = ", ".join(registry.available("reranker"))
            raise ConfigError(
                f"{keyword_flag('served', served)}: neither a pipeline file (.toml, .yaml, "
                f".json) nor a registered reranker name ({names})"
            )
        given = keyword_flag("served", served)
        return _named(name, f"the pipeline that served the log ({name}, as {given} names it)")
    logged = found.served_by if found is not None else None
    name = _registered(logged)
    if name is not None:
        assert found is not None
        total = sum(found.served.values())
        share = "" if found.served[logged] == total else f" in {found.served[logged]} of {total}"
        return _named(
            name, f"the pipeline that served the log ({name}, as the log names it{share})"
        )
    why = (
        f"the log names {logged!r}, not a registered name"
        if logged
        else "the log names no pipeline"
    )
    spec = pipeline_spec(DEFAULT_HYBRID, name="hybrid")
    what = (
        f"the default hybrid (first stage + MiniLM), NOT what served the log: {why}; name "
        f"what served it, a pipeline file or a registered name, with {keyword_flag('served')} "
        "to write it"
    )
    return Served(spec, to_toml(spec, f"rerankit tune --clicks: {what}"), what, served=False)


def reads_first_stage(spec: Any, folder: str | Path | None = None) -> bool:
    """Whether a pipeline spec reads each document's first-stage score: a ``field``
    scorer on ``first_stage_score``, or a learned model whose report (the ``.json`` beside
    it, its path relative to ``folder``) lists a first-stage feature."""
    if isinstance(spec, Mapping):
        if spec.get("field") == FIRST_STAGE_SCORE:
            return True
        if spec.get("type") == "learned" and isinstance(spec.get("model"), str):
            model = Path(spec["model"])
            report = (
                Path(folder or ".") / model if not model.is_absolute() else model
            ).with_suffix(".json")
            try:
                features = json.loads(report.read_text(encoding="utf-8")).get("features", ())
            except (OSError, ValueError, AttributeError):
                return False
            return any(str(f).startswith("first_stage") for f in features)
        return any(reads_first_stage(v, folder) for v in spec.values())
    if isinstance(spec, list):
        return any(reads_first_stage(v, folder) for v in spec)
    return False


def _score_scale(path: Path) -> str | None:
    """The scale of the scores of the pipeline file ``path`` (None: it does not build here)."""
    try:
        return str(load(path).score_scale)
    except Exception as exc:  # a pipeline that needs what is not installed here
        logger.debug("the written pipeline does not build here: %s", exc)
        return None


@dataclass
class Written:
    """What :func:`write_learned` wrote: the pipeline file and which pipeline it holds
    (``what``), every file with what reads it (``files``), the scale of the pipeline's
    scores (None: it does not build here) and whether it reads the first-stage score."""

    pipeline: Path
    what: str
    learned: bool
    files: list[tuple[Path, str]] = field(default_factory=list)
    score_scale: str | None = None
    first_stage: bool = False
    #: what served the log, written back: serving it changes nothing for the callers
    unchanged: bool = False

    def requirements(self) -> list[str]:
        """What serving the pipeline asks of the caller, one sentence each (none when it is
        what served the log)."""
        out: list[str] = []
        if self.unchanged:
            return out
        if self.score_scale == "relative":
            out.append(
                "its scores are relative (min-max within each request: the best document "
                "1.0, the worst 0.0), not the probability the service's default hybrid "
                "answers: a client that keeps relevance_score > 0.5, or compares scores "
                "across requests, must drop that rule before serving it"
            )
        elif self.score_scale is not None and self.score_scale != DEFAULT_SCALE:
            out.append(
                f"its scores are on the {self.score_scale} scale, not the probability the "
                "service's default hybrid answers: revisit any threshold on relevance_score"
            )
        if self.first_stage:
            out.append(
                "it reads each document's first-stage score: send it with every document "
                f"({PASS_FIRST_STAGE}); without it the score counts as 0 for all and the "
                "service warns"
            )
        return out


def write_learned(
    found: LogLearning,
    out: str | Path,
    *,
    served: Served | None = None,
    keep_learned: bool = False,
    source: str = "",
) -> Written:
    """Write what learning from the log decided to ``out`` (see the module doc): the
    learned pipeline with its model (``<out>.lgb.txt``) and its report (``.lgb.json``) when
    adopted or ``keep_learned``, else ``served`` (default: :func:`served_pipeline` of the
    log); and the propensities beside it (``<out stem>.propensities.json``). ``source``
    names the log in the file's comment."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    result = found.learning
    files: list[tuple[Path, str]] = []
    unchanged = False
    if result.adopt or keep_learned:
        model = out.with_suffix(".lgb.txt")
        spec = result.save(model, relative_to=out.parent)
        what = "the learned pipeline" + (
            ""
            if result.adopt
            else f", not adopted: written anyway as asked ({keyword_flag('keep_learned', True)})"
        )
        out.write_text(to_toml(spec, f"rerankit tune --clicks {source}: {what}"), "utf-8")
        files.append((out, "the pipeline: rerankit serve --reranker and rerankit.load read it"))
        files.append((model, "the model: the pipeline loads it (named relative to it)"))
        files.append(
            (
                model.with_suffix(".json"),
                "the model's report (its features, the propensities, the cross-validation): "
                "the pipeline reads from it the embedding model its features used",
            )
        )
    else:
        chosen = served or served_pipeline(None, found)
        spec, what, unchanged = chosen.spec, chosen.what, chosen.served
        out.write_text(chosen.text, encoding="utf-8")
        files.append((out, "the pipeline: rerankit serve --reranker and rerankit.load read it"))
    beside = out.with_name(out.stem + ".propensities.json")
    beside.write_text(json.dumps(result.propensities.as_dict(), indent=2) + "\n", "utf-8")
    files.append((beside, "the propensities by position: for you; serving does not read it"))
    return Written(
        out,
        what,
        learned=result.adopt or keep_learned,
        files=files,
        score_scale=_score_scale(out),
        first_stage=reads_first_stage(spec, out.parent),
        unchanged=not (result.adopt or keep_learned) and unchanged,
    )
