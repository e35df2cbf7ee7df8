"""Which of a result's warnings say how the pipeline is set, the same on every call (the
default hybrid not fusing the retriever's scores, a min_score threshold on scores that are
no probability: a batch says them once, in its summary; an adapter logs them once), and
which the rerank has already logged itself (an adapter, which logs a result's warnings
because its framework gets documents only, does not log those again)."""

from __future__ import annotations

import re

__all__ = ["logged_by_rerank", "pipeline_note"]

#: a warning of a pipeline's stage starts with its name
_STAGE = r"(?:stage '[^']*': )?"

#: the default hybrid given documents that carry a first-stage score (as rerankit's own
#: candidates.jsonl and LlamaIndex's nodes do) ranks by the texts alone: a setting, said on
#: every call. ``hybrid.py`` words it.
_PIPELINE_NOTE = re.compile(
    rf"^{_STAGE}(every document carries|\d+ of \d+ documents carry)( a first-stage "
    r"\(retriever\) score, which this hybrid does not fuse: .*)$",
    re.S,
)

#: what ``base.py`` logs at WARNING itself, and puts in the result's warnings too: shared
#: ids, non-finite scores, an empty query or list, input dicts whose score field is replaced
_LOGGED = re.compile(
    rf"^{_STAGE}(?:(?:\d+ ids are|1 id is) shared by several documents \(|scorer '.*' "
    r"returned \d+ non-finite score|the (?:query|document list) is empty; input order kept"
    r"|\d+ input dicts? already had a )",
    re.S,
)


#: a min_score rule's threshold on scores that are no probability
#: (:data:`rerankit.normalize.THRESHOLD_NOTES`): a setting, the same on every call
_THRESHOLD_NOTE = re.compile(
    rf"^{_STAGE}(rule 'min_score': the scores are (?:relative|logits)\b.*)$", re.S
)


def pipeline_note(warning: str) -> str | None:
    """The note ``warning`` is on the pipeline's settings, worded without the call's counts
    (``documents carry a first-stage ...``, ``rule 'min_score': the scores are relative
    ...``), or None when it is about the call."""
    match = _PIPELINE_NOTE.match(warning)
    if match:
        return "documents carry" + match.group(2)
    match = _THRESHOLD_NOTE.match(warning)
    return match.group(1) if match else None


def logged_by_rerank(warning: str) -> bool:
    """Whether the rerank logged ``warning`` itself (on ``rerankit.rerankers.base``)."""
    return _LOGGED.match(warning) is not None
