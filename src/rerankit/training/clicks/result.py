"""What :func:`~.learn.learn_from_clicks` returns: :class:`ClickLearning`, which says what
it found, writes the model and gives the pipeline that serves it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import crossval, ltr
from ..fusion_search import DEFAULT_HYBRID, pipeline_spec
from .propensity import Propensities

__all__ = ["ClickLearning", "Option"]

#: an option of the cross-validation: (LightGBM setting, trees, blend, None)
Option = ltr.Option


@dataclass
class ClickLearning:
    """What :func:`learn_from_clicks` found: the propensities, the cross-validation and
    its verdict against what was served, the option chosen (LightGBM setting, trees,
    blend), the booster fitted on every query (None when the verdict keeps what was
    served, unless asked to keep it), the features it reads and the learning curve by
    sessions per query (``(sessions, cross-validated counterfactual nDCG@10)``)."""

    propensities: Propensities
    corrected: bool
    cv: crossval.CrossValidation
    verdict: crossval.Verdict
    option: Option
    booster: Any
    features: tuple[str, ...]
    curve: list[tuple[float, float]] = field(default_factory=list)
    queries: int = 0
    sessions: int = 0
    #: whether the first stage's scores counted (the log carried them): without them the
    #: blend, and the pipeline :meth:`save` gives, is with MiniLM alone
    first_stage: bool = True
    #: the embedding model the features read, when not the bundled MiniLM (a hub id or a
    #: folder): the pipeline :meth:`save` gives reads it too
    embedding: str | None = None

    @property
    def adopt(self) -> bool:
        return self.verdict.adopt

    def describe(self) -> str:
        setting, trees, blend, _ = self.option
        mix = (
            "the learned score alone"
            if blend == 1
            else f"learned score {blend:.2f}, blended with "
            f"{'first stage + ' if self.first_stage else ''}MiniLM {1 - blend:.2f}"
        )
        chosen = f"{setting}, {trees} trees, {mix}"
        verdict = self.verdict.describe().replace("default", "served")
        if self.adopt:
            outcome = "adopted: it beats what was served by more than the margin times the noise"
        elif self.booster is not None:  # keep_learned
            outcome = (
                "not adopted: it does not beat what served the log by more than the margin "
                "times the noise; the learned ranker is fitted anyway, as asked"
            )
        else:
            outcome = (
                "not adopted: it does not beat what served the log by more than the margin "
                "times the noise"
            )
        return f"{chosen}; counterfactual {verdict}; {outcome}"

    def save(
        self,
        path: str | Path,
        name: str = "learned-from-clicks",
        *,
        relative_to: str | Path | None = None,
    ) -> dict[str, Any]:
        """Write the model (``path``, LightGBM's text format) and its report (``.json``
        beside it, the propensities included), and return the pipeline that serves it: the
        learned scorer alone, or blended with the first stage + MiniLM fusion as chosen
        (with MiniLM alone when the first stage's scores did not count: the pipeline then
        reads no ``first_stage_score``), a spec for :func:`rerankit.load`. Only for a
        booster that was fitted (adopted, or ``keep_learned``). ``relative_to``: the folder
        of the pipeline file the spec will be written to; a model in it (or below) is then
        named relative to it, so the two moved together still load
        (:func:`rerankit.config.read_pipeline`); otherwise by its full path."""
        if self.booster is None:
            raise ValueError(
                "nothing to save: the verdict kept what served the log (pass "
                "keep_learned=True to fit the learned ranker anyway)"
            )
        path = ltr.save(self.booster, path, self.report())
        learned: dict[str, Any] = {"type": "learned", "model": _model_path(path, relative_to)}
        if self.embedding:
            learned["embedding"] = self.embedding
        blend = self.option[2]
        if blend == 1:
            return {"name": name, "stages": [{"scorer": learned}]}
        fusion = (
            DEFAULT_HYBRID
            if self.first_stage
            else {**DEFAULT_HYBRID, "weights": {"embedding": 1.0}}
        )
        stage = pipeline_spec(fusion, name=name, embedding_model=self.embedding)["stages"][0]
        for entry in stage["scorers"]:
            entry["weight"] = round((1 - blend) * entry["weight"], 4)
        stage["scorers"].insert(0, {**learned, "weight": blend})
        return {"name": name, "stages": [stage]}

    def report(self) -> dict[str, Any]:
        setting, trees, blend, _ = self.option
        v = self.verdict
        return {
            "corrected": self.corrected,
            "propensities": self.propensities.as_dict(),
            "setting": setting,
            "params": ltr.SETTINGS.get(setting),
            "trees": trees,
            "blend": blend,
            "features": list(self.features),
            "first_stage": self.first_stage,
            **({"embedding_model": self.embedding} if self.embedding else {}),
            "queries": self.queries,
            "sessions": self.sessions,
            "adopted": v.adopt,
            "cross_validation": {
                "learned": v.learned,
                "served": v.default,
                "gain": v.gain,
                "noise": v.noise,
                "fold_gains": v.fold_gains,
                "margin": v.margin,
            },
            "learning_curve": [{"sessions": s, "ndcg@10": m} for s, m in self.curve],
        }


def _model_path(path: Path, folder: str | Path | None) -> str:
    """``path`` relative to ``folder`` when it lies in it, else in full."""
    full = Path(path).resolve()
    if folder is not None and full.is_relative_to(Path(folder).resolve()):
        return full.relative_to(Path(folder).resolve()).as_posix()
    return str(full)
