"""What an evaluation's table cannot show by itself, said under it (beside
:mod:`~rerankit.eval.latency`'s note on its latency columns):

* **ECE** (:func:`calibration_note`): what the column means, and which pipelines'
  probabilities are off on this data by more than :data:`ECE_REFIT`.
* **Candidates dropped** (:func:`kept_only_note`): a pipeline ending in a cut (``min_score``,
  a ``top_k``) scores only what it kept, so its ECE and thresholds describe those alone.
* **Degraded queries** (:func:`degraded_notes`): a query's answer is degraded when a scorer
  or stage failed and the pipeline fell back (a cascade keeps the earlier stage's order and
  scores): the pipeline's row then measures the fallback on those queries, not the stage
  that failed. Each pipeline with such queries gets a line naming how many and the first
  cause; :func:`all_degraded` names those whose every query degraded (``rerankit eval``
  exits 1 for them).
* **Judgments from the cache** (:func:`judgment_cache_note`): an LLM scorer answers a
  judgment it made before from its judgment cache, with no call, no tokens and almost no
  time, so the latency, LLM calls and tokens columns count what this run paid, not what the
  judge costs.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..calibration import Calibration
from ..errors import keyword_flag, said_for
from ..ordering import Rule
from ..scorers.recipe import HYBRID_CALIBRATION
from .given import IN_MEMORY, given_placeholder
from .qrels import ALL_SPLITS
from .refit_check import ECE_REFIT, MIN_QUERIES, fit_queries, ranks_training, too_few_to_refit

__all__ = [
    "ECE_REFIT",
    "all_degraded",
    "calibration_note",
    "degraded_notes",
    "dropped_candidates",
    "fell_back",
    "fitted_on",
    "in_sample_note",
    "judgment_cache_note",
    "kept_only_note",
    "refit_call",
    "top_bins_note",
]

#: the high scores :func:`top_bins_note` looks at (the bins from this score up), the gap
#: between their mean score and their observed share of relevant pairs it reports, and the
#: fewest pairs it needs to say anything
TOP_SCORE, TOP_GAP, TOP_PAIRS = 0.8, 0.1, 20
#: where the precision and recall at each threshold are (the same words for a caller of
#: the library and a user of the command: tune's account prints them for both)
THRESHOLDS_HINT = "`rerankit eval --thresholds`; in Python, an evaluation's .thresholds"


def refit_call(
    data: str | os.PathLike[str] | None = None,
    first_stage: str | Mapping[str, Any] = "auto",
    candidates: int = 100,
    max_queries: int | None = None,
    split: str | None = None,
    train_split: str | None = None,
    test_split: str | None = None,
    first_stage_note: str | None = None,
) -> str:
    """How to refit a pipeline's probabilities on ``data`` with the same ``first_stage``,
    ``candidates`` and ``max_queries`` (said to take tune's own first N queries, not the
    evaluated ones): the :func:`rerankit.training.tune` call, or within
    :func:`~rerankit.errors.flags_first` the ``rerankit tune`` command (``first_stage`` left
    out when it is the default, ``auto``; ``DATA`` when the folder is not known, as for a
    Dataset built in Python). ``train_split`` and ``test_split``: the splits to name (tune's
    own, in its report). Else the evaluated ``split``'s halves (``SPLIT:odd`` to fit,
    ``SPLIT:even`` to check; for a half, the other half to fit) where tune's default
    training split would not do: a retriever's file that ranks fewer than half of the
    training split's judged queries (:func:`~.refit_check.ranks_training`; often it holds
    the evaluated split's alone), or a folder without ``qrels/train.tsv``.
    ``first_stage_note``: what to say of ``first_stage`` after the call. Candidates given
    in memory (a mapping, or :data:`~.given.IN_MEMORY`) are named by a placeholder, never
    written out: tune takes the same mapping (:func:`~.given.given_placeholder`)."""
    folder = "DATA" if data is None else os.fspath(data)
    given = isinstance(first_stage, Mapping) or first_stage == IN_MEMORY
    if given:
        first_stage, said_given = given_placeholder()
        first_stage_note = first_stage_note or said_given
    default = first_stage in ("auto", None)
    halves = (train_split, test_split) if train_split and test_split else None
    why = None  # why tune would fit on a half of the evaluated split, when it was not named
    if halves is None and split and "," not in split:
        base, _, half = split.partition(":")
        untrained = data is not None and (Path(folder) / "qrels").is_dir()
        untrained = untrained and not (Path(folder) / "qrels" / "train.tsv").is_file()
        # a retriever's own file for the evaluated split alone: tune fits on that split's
        # halves; one that ranks the training split's queries too fits on those
        alone = not default and not (data is not None and ranks_training(folder, first_stage))
        if half in ("odd", "even") and (untrained or alone):
            other = "even" if half == "odd" else "odd"
            halves = (f"{base}:{other}", split)
        elif not half and (untrained or (alone and split != ALL_SPLITS)):
            halves = (f"{split}:odd", f"{split}:even")
        if halves:  # a half nobody named: say why tune would fit on it
            why = (
                "the folder has no qrels/train.tsv"
                if untrained
                else f"{first_stage} ranks too few of the train split's queries"
            )
    fits = halves[0] if halves else "train"  # tune's default training split
    known = None if data is None or given else fit_queries(folder, fits, first_stage, max_queries)
    if known is not None and known < MIN_QUERIES:  # tune would refuse: say what it needs
        return too_few_to_refit(known, fits, first_stage, max_queries, halves, why)
    options: list[tuple[str, object]] = [] if default else [("first_stage", first_stage)]
    options.append(("candidates", candidates))
    if max_queries:
        options.append(("max_queries", max_queries))
    if halves:
        options += [("train_split", halves[0]), ("test_split", halves[1])]
    options += [("calibrate", True), ("out", "calibrated.toml")]
    python = ", ".join(
        [folder if data is None else json.dumps(folder)]
        + [f"{k}={_written(k, v, given)}" for k, v in options]
    )
    command = " ".join(
        ["rerankit tune --data", shlex.quote(folder) if data is not None else folder]
        + [
            "--" + k.replace("_", "-") + ("" if v is True else f" {_typed(k, v, given)}")
            for k, v in options
        ]
    )
    python = f"rerankit.training.tune({python})"
    said = said_for(python, command)
    if max_queries:  # tune takes its own first N: not the N queries an evaluation read
        fits = f"the first {max_queries} queries of {halves[0] if halves else 'its training split'}"
        said += (
            f" ({said_for(f'max_queries={max_queries}', f'--max-queries {max_queries}')} "
            f"there takes {fits}, "
            "not the queries evaluated here)"
        )
    return said + (f" ({first_stage_note})" if first_stage_note else "")


def _written(key: str, value: object, given: bool) -> str:
    """An option's value as Python writes it (a placeholder as it is)."""
    if isinstance(value, str) and not (given and key == "first_stage"):
        return json.dumps(value)
    return str(value)


def _typed(key: str, value: object, given: bool) -> str:
    """An option's value as typed after its flag (a placeholder as it is)."""
    return str(value) if given and key == "first_stage" else shlex.quote(str(value))


def calibration_note(
    rows: Sequence[Mapping[str, Any]], refit: Mapping[str, Any] | None = None
) -> str:
    """What the ECE column means, and which pipelines' probabilities are off on this data
    by more than :data:`ECE_REFIT` (refit them before thresholding: ``refit``, the
    :func:`refit_call` that does it for this evaluation, by default one with placeholders;
    its ``refitted``: the pipelines that are such a refit, :func:`fitted_on`; ``tried``:
    tune's own report after ``calibrate=True``, whose refit was just tried on these
    judgments). A refit is advised only where none was made and where one would pay: a
    row's ``calibration["refit"]`` (:func:`~rerankit.eval.refit_check.probability_refit`,
    a refit cross-validated over the queries evaluated) says whether it predicts held-out
    queries better than the noise. Otherwise (one in the table is off too, tune just tried
    it, or the check says it would not pay) the advice for every pipeline off is the same:
    keep the default's probabilities and choose the threshold by measured precision and
    recall. A pipeline with degraded queries is not named: its scores there are its
    fallback's, which a refit of its calibration would not fix (:func:`degraded_notes` says
    so); nor is one that dropped candidates: its ECE is of what it kept only
    (:func:`kept_only_note`)."""
    note = (
        "\nECE: how far the probability scores are, on average, from the share of relevant "
        "pairs at that score on these judgments (0: a threshold such as 0.5 means what it says)."
    )
    off = [
        r["pipeline"]
        for r in rows
        if (r.get("ece") or 0.0) > ECE_REFIT
        and not r.get("degraded_queries")
        and not r.get("dropped_candidates")
    ]
    checks = {r["pipeline"]: (r.get("calibration") or {}).get("refit") for r in rows}
    refit = dict(refit or {})
    refitted = refit.pop("refitted", None)  # the pipelines that are that refit (tune's)
    tried = refit.pop("tried", None)  # tune's calibrate run: its refit was just tried
    refits = {refitted} if isinstance(refitted, str) else set(refitted or ())
    # off, but a refit on these queries would not predict the others better than the noise
    idle = [n for n in off if n not in refits and checks.get(n) and not checks[n]["adopt"]]
    redo = [name for name in off if name not in refits and name not in idle]
    again = [name for name in off if name in refits]
    done = [name for name in refits if name not in off]
    tune_call = said_for("rerankit.training.tune(calibrate=True)", "`rerankit tune --calibrate`")
    if redo and (done or not (again or tried)):
        note += (
            f" Above {ECE_REFIT:g} for {', '.join(redo)}: this data's share of relevant "
            "candidates differs from the one they were calibrated on; refit before relying on "
            "a threshold, on judged queries with the same first stage and number of candidates "
            + (
                f"as here: {', '.join(done)} is that refit"
                if done
                else "as here: " + refit_call(**refit)
            )
        )
        redo, said = [], "."  # what follows is another sentence
    else:
        said = ""
    if not (redo or again or idle):
        return note
    why = []
    if again:
        are = "is already a refit" if len(again) == 1 else "are already refits"
        why.append(f"{', '.join(again)} {are} by {tune_call} and still off on these queries")
    elif redo:
        why.append(
            f"the refit this {tune_call} run tried did not predict held-out queries better "
            f"than the noise, so {tried if isinstance(tried, str) else 'what it wrote'} "
            "has the default's probabilities"
        )
    for name in idle:
        check, whose = checks[name], f"for {name}, " if len(redo + again + idle) > 1 else ""
        why.append(
            f"{whose}a refit fitted on some of these {check['queries']} queries did not "
            f"predict the others better than {check['margin']:g} x the noise (log-loss gain "
            f"{check['gain']:+.4f}, noise {check['noise']:.4f}), so {tune_call} would keep "
            "its probabilities"
        )
    note += (
        f"{said} Above {ECE_REFIT:g} for {', '.join(redo + again + idle)}: {'; '.join(why)}, and "
        "another refit on as few judgments would not do better. Keep the default's "
        f"probabilities (what tune writes without {keyword_flag('keep_learned', True)}) and "
        "choose the threshold by the precision and recall measured at each one "
        f"({THRESHOLDS_HINT}) on judged queries, checked on other ones; a refit may pay "
        "once more queries are judged."
    )
    return note


def dropped_candidates(
    given: Mapping[str, Mapping[str, Any]], scores: Mapping[str, Mapping[str, Any]]
) -> int:
    """How many of the ``given`` candidates (query id -> ids) a pipeline's ``scores`` (query
    id -> id -> score) leave out, over the queries it scored: what a cut such as
    ``min_score``, or a ``top_k``, dropped."""
    return sum(len(set(given.get(q, ())) - set(scored)) for q, scored in scores.items())


def kept_only_note(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """A line naming the pipelines that dropped some of the first stage's candidates (a
    cut such as ``min_score``, or a ``top_k``; the rows' ``dropped_candidates``): their
    calibration (ECE) and thresholds describe only what they kept, the refit advice does
    not apply to them, and a cut is chosen by measuring the ranker without one (None: none
    dropped any)."""
    cut = [
        f"{r['pipeline']} ({r['dropped_candidates']})" for r in rows if r.get("dropped_candidates")
    ]
    if not cut:
        return None
    return (
        f"Dropped some of the first stage's candidates (how many in all): {', '.join(cut)}. "
        "Their ECE and thresholds describe only the candidates they kept, not their ranker's "
        "scores over all of them (a cut keeps the high scores, so these read off), and no "
        "refit of their calibration is advised from them. To choose a cut, measure the ranker "
        f"without it ({THRESHOLDS_HINT}): its recall at each t counts every relevant candidate."
    )


def top_bins_note(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """ECE is an average over every pair, most of them low scores: the high ones (from
    :data:`TOP_SCORE`) can be far from their share of relevant pairs while the ECE stays
    small. A line naming, for each pipeline whose pairs scoring that high (at least
    :data:`TOP_PAIRS`) are relevant more or less often than their mean score by more than
    :data:`TOP_GAP`, their number, mean score and observed share (None: none is)."""
    said = []
    for r in rows:
        if r.get("degraded_queries"):
            continue
        top = [b for b in (r.get("calibration") or {}).get("bins", ()) if b["low"] >= TOP_SCORE]
        n = sum(b["count"] for b in top)
        if n < TOP_PAIRS:
            continue
        predicted = sum(b["predicted"] * b["count"] for b in top) / n
        observed = sum(b["observed"] * b["count"] for b in top) / n
        if abs(predicted - observed) > TOP_GAP:
            said.append(
                f"{r['pipeline']}: of its {n} pairs scoring >= {TOP_SCORE:g} (mean score "
                f"{predicted:.2f}), {100 * observed:.0f} % are relevant"
            )
    if not said:
        return None
    return (
        f"Scores >= {TOP_SCORE:g} off their share of relevant pairs (ECE averages over every "
        "pair, mostly low scores, so it can be small while these are off): "
        + "; ".join(said)
        + ". A cut that high keeps candidates at that share, not at their score: choose it "
        f"by the precision measured at each threshold ({THRESHOLDS_HINT})."
    )


#: the header ``rerankit tune`` writes on a pipeline file: how, on which collection and split
_FITTED = re.compile(
    r"^# (Calibrated|Tuned|Trained|Written) by `rerankit tune([^`]*)` on (\S+) (\S+?)(?::\s|\s|$)"
)


def fitted_on(item: Any, reranker: Any = None) -> dict[str, Any] | None:
    """What a pipeline was fitted on: from the header ``rerankit tune`` writes on its file,
    ``data`` (the collection's name), ``split`` and ``calibrated`` (its probabilities
    refitted by ``tune --calibrate``); for anything else, ``calibrated`` alone (``data`` and
    ``split`` None) when the ``reranker`` built from it has such refitted probabilities
    (:func:`refitted_probabilities`: a spec or an object in memory is the same pipeline as
    its file); None otherwise, as for the default written unfitted."""
    found = _header(item)
    if found is not None or reranker is None or not refitted_probabilities(reranker):
        return found if found != {} else None
    return {"data": None, "split": None, "calibrated": True}


def refitted_probabilities(reranker: Any) -> bool:
    """Whether ``reranker``'s scores (its last stage that scores, a rule aside) are a
    calibrated fusion of the default hybrid's signals (those tune calibrates) whose output
    calibration is not the default hybrid's: probabilities refitted by ``tune
    --calibrate``, however the pipeline was passed (a calibrated fusion of other signals,
    written by hand, is none)."""
    steps = [getattr(s, "step", s) for s in (getattr(reranker, "stages", None) or [reranker])]
    scoring = [s for s in steps if not isinstance(s, Rule)]
    last = scoring[-1] if scoring else None
    output = getattr(last, "output_calibration", None)
    if getattr(last, "calibration", None) is None or not isinstance(output, Calibration):
        return False
    if not set(last.calibration) <= set(HYBRID_CALIBRATION["calibration"]):
        return False
    return output != Calibration.parse(HYBRID_CALIBRATION["output_calibration"])


def _header(item: Any) -> dict[str, Any] | None:
    """:func:`fitted_on` from a pipeline file's header: None when ``item`` is no file
    written by tune, ``{}`` for the default written unfitted."""
    if not isinstance(item, (str, os.PathLike)) or Path(item).suffix.lower() != ".toml":
        return None
    try:
        with open(item, encoding="utf-8") as f:
            head = " ".join(line for line in f.read(4096).splitlines() if line.startswith("#"))
    except (OSError, UnicodeDecodeError):
        return None
    found = _FITTED.match(head)
    if found is None:
        return None
    how, flags, data, split = found.groups()
    refitted = "probabilities refitted" in head
    if how == "Written" and not refitted:  # the default, nothing learned
        return {}
    return {"data": data, "split": split, "calibrated": "--calibrate" in flags}


def _overlap(fitted: str, evaluated: str) -> bool:
    """Whether a split fitted on and one evaluated share queries (``all`` shares with any;
    ``test:odd`` and ``test:even`` share none)."""
    (fn, _, fs), (en, _, es) = fitted.partition(":"), evaluated.partition(":")
    if "all" not in (fn, en) and not set(fn.split(",")) & set(en.split(",")):
        return False
    return not (fs and es and fs != es)


def in_sample_note(fitted: Mapping[str, Mapping[str, Any]], data: str, split: str) -> str | None:
    """A line naming the pipelines (label -> :func:`fitted_on`) fitted on queries of this
    collection ``data`` that the evaluated ``split`` holds too: their rows measure queries
    they learned from, so read better than they will do elsewhere (None: none was)."""
    inside = {n: f for n, f in fitted.items() if f["data"] == data and _overlap(f["split"], split)}
    if not inside:
        return None
    said = ", ".join(f"{name} (fitted on {f['data']} {f['split']})" for name, f in inside.items())
    halves = {f["split"] for f in inside.values() if f["split"].endswith((":odd", ":even"))}
    other = [
        h.rpartition(":")[0] + (":even" if h.endswith(":odd") else ":odd") for h in sorted(halves)
    ]
    return (
        f"in-sample: {said} learned from queries of this {split} split, so their rows read "
        "better than they will on queries they did not see; measure them on a split they were "
        "not fitted on" + (f" (here: {', '.join(other)})" if other else "")
    )


def fell_back(row: Mapping[str, Any]) -> str | None:
    """How many of a row's queries degraded, as the comparison marks it (``"9 of 15
    queries degraded (fell back to an earlier stage)"``); None when none did."""
    n = row.get("degraded_queries") or 0
    if not n:
        return None
    of = row.get("reranked_queries") or n
    return f"{n} of {of} queries degraded (fell back to an earlier stage)"


def degraded_notes(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """A line for each row with degraded queries: how many of the queries it reranked, the
    first cause, and that its row measures the fallback (empty when none degraded)."""
    notes = []
    for r in rows:
        n = r.get("degraded_queries") or 0
        if not n:
            continue
        of = r.get("reranked_queries") or n
        llm = r.get("llm_calls") or r.get("llm_cache_hits")
        notes.append(
            f"{r['pipeline']}: {n} of {of} queries degraded (first cause: "
            f"{r.get('degraded_cause') or 'not recorded'}): "
            + ("its row measures" if n == of else "on those queries its row measures")
            + " the fallback, not "
            + ("the LLM stage" if llm else "the stage that failed")
            + (
                "; its calibration and thresholds are left out (they would be the fallback's)"
                if n == of
                else ""
            )
        )
    return notes


def all_degraded(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The pipelines whose every reranked query was degraded (their rows measure only the
    fallback)."""
    return [
        r["pipeline"]
        for r in rows
        if r.get("degraded_queries") and r["degraded_queries"] == r.get("reranked_queries")
    ]


def judgment_cache_note(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """Which pipelines read LLM judgments from the judgment cache, and that the latency,
    LLM calls and tokens columns count only what this run paid (None when none did)."""
    read = [(r["pipeline"], r["llm_cache_hits"]) for r in rows if r.get("llm_cache_hits")]
    if not read:
        return None
    said = ", ".join(f"{name} read {n} LLM judgment{'s' if n != 1 else ''}" for name, n in read)
    return (
        f"(mean ms, p95 ms, LLM calls, tokens: {said} from the judgment cache, with no call "
        "and almost no time, so these columns count only what this run paid, not what the "
        "judge costs; to measure that, run `rerankit cache clear judgments` and evaluate "
        "again)"
    )
