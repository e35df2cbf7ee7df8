"""Learning from what users click: the click log's format and writer (:mod:`.log`), its
reader (:mod:`.reader`), sessions grouped by query (:mod:`.sessions`), position-bias
propensities and RandPair exploration (:mod:`.propensity`), counterfactual estimates
(:mod:`.counterfactual`), learning with the bias corrected and the verdict against what
was served (:mod:`.learn`; from a log file: :mod:`.from_log`), interleaving (optimized:
:mod:`.optimized`; team draft and the report: :mod:`.interleave`), a click simulator
(:mod:`.simulate`; over a judged collection: :mod:`.simulate_data`), what learning
writes and serving it asks (:mod:`.deploy`), and a log checked before learning
(:mod:`.checking`).

The names below are the ones a user needs; each module documents the rest. They load on
first use, so a service that only writes the log (``rerankit.training.clicks.log``)
imports nothing of learning."""

from __future__ import annotations

import importlib
from typing import Any

#: public name -> the module that defines it
_LAZY = {
    "STORE": "log",
    "ClickLog": "log",
    "Feedback": "log",
    "Impression": "log",
    "LoggedDocument": "log",
    "text_hash": "log",
    "ReadReport": "reader",
    "Session": "reader",
    "logs_files": "reader",
    "parse_record": "parsing",
    "LogCheck": "checking",
    "check_log": "checking",
    "read_log": "reader",
    "QueryLog": "sessions",
    "collect": "sessions",
    "log_features": "sessions",
    "Propensities": "propensity",
    "estimate_propensities": "propensity",
    "randpair": "propensity",
    "counterfactual_ndcg": "counterfactual",
    "ips_relevance": "counterfactual",
    "ClickLearning": "result",
    "learn_from_clicks": "learn",
    "LogLearning": "from_log",
    "learn_from_log": "from_log",
    "read_corpus": "from_log",
    "read_features": "from_log",
    "write_features": "from_log",
    "InterleavingReport": "interleave",
    "credit": "interleave",
    "interleaving_report": "interleave",
    "team_draft": "interleave",
    "optimized_interleave": "optimized",
    "PositionBasedModel": "simulate",
    "simulate_query": "simulate",
    "grades_0_to_4": "simulate",
    "records": "sessions",
    "SimulatedLog": "simulate_data",
    "simulate_collection": "simulate_data",
    "Served": "deploy",
    "Written": "deploy",
    "served_pipeline": "deploy",
    "write_learned": "deploy",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
