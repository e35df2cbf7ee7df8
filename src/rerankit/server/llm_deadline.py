"""Whether a served pipeline's LLM calls fit in the service's deadline: a judge whose
retries (attempts x timeout, plus the waits) outlast ``[server] deadline`` is cut by the
deadline, not by its retry policy (:func:`deadline_warnings`)."""

from __future__ import annotations

from typing import Any

from ..llm.resilience import RetryPolicy
from ..rerankers import Pipeline

__all__ = ["deadline_warnings", "llm_policies"]


def llm_policies(reranker: Any) -> list[tuple[str, RetryPolicy]]:
    """Each LLM scorer of ``reranker`` with its retry policy, named ``stage 'S' (scorer)``
    (``scorer`` alone outside a pipeline)."""
    steps = (
        [(f"stage {s.name!r} ", s.step) for s in reranker.stages]
        if isinstance(reranker, Pipeline)
        else [("", reranker)]
    )
    found = []
    for where, step in steps:
        for scorer in step.scorers() if hasattr(step, "scorers") else ():
            policy = getattr(getattr(scorer, "runner", None), "policy", None)
            if isinstance(policy, RetryPolicy):
                found.append((f"{where}({scorer.name})" if where else scorer.name, policy))
    return found


def deadline_warnings(reranker: Any, timeout: float) -> list[str]:
    """A warning for each LLM scorer of ``reranker`` (a pipeline the service serves) that
    can take longer per call (its ``retry``'s attempts x timeout, plus the waits between
    them) than ``timeout``, the service's ``[server] deadline`` in seconds
    (``settings.deadline``): the request's deadline, not the retry policy, would then end a
    provider that stalls. Known from the settings alone, as
    :func:`~rerankit.server.shutdown.cut_warning`; ``rerankit check`` prints them. None:
    an empty list."""
    warnings = []
    for scorer, policy in llm_policies(reranker):
        longest = policy.longest_call()
        if longest <= timeout:
            continue
        waits = " + ".join(f"{w:g}" for w in policy.waits())
        said = f", plus waits of {waits} s" if waits else ""
        warnings.append(
            f"{scorer}: one LLM call can take up to {longest:g} s (retry: {policy.attempts} "
            f"attempt{'s' if policy.attempts > 1 else ''} x timeout {policy.timeout:g} s{said}), "
            f"longer than [server] deadline "
            f"({timeout:g} s): a provider that stalls is cut by the request's deadline, not "
            "by its retries (a cascade answers the earlier stage's order, degraded, without "
            "llm_failed flags or usage; a judge alone, 504). Lower the scorer's retry "
            f"attempts or timeout until attempts x timeout plus the waits is under "
            f"{timeout:g} s, or raise [server] deadline above {longest:g} s"
        )
    return warnings
