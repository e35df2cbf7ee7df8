"""The library's values the parsers show in ``--help`` or take as choices, where the
module that holds them imports numpy, the scorers or training: copied here so that
building the parser imports none of that. ``tests/cli/test_quick_help.py`` checks that each
equals the library's own, named beside it."""

from __future__ import annotations

__all__ = [
    "CACHE_NAMES",
    "CLICK_LOG_STORES",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_RERANKERS",
    "INTERLEAVING_BY",
    "INTERLEAVING_METHODS",
    "LOG_FORMATS",
    "MAX_HELD_OUT",
    "SIMULATED_SHOWN",
]

#: :data:`rerankit.cache.manage.CACHE_NAMES`: the caches ``rerankit cache`` names
CACHE_NAMES = ("embeddings", "judgments", "answers", "onnx", "wordfreq")
#: :data:`rerankit.eval.evaluation.DEFAULT_RERANKERS`: what ``eval`` compares by default
DEFAULT_RERANKERS = "bm25,embedding,hybrid"
#: :data:`rerankit.rerankers.precompute.DEFAULT_BATCH_SIZE`: ``precompute``'s batch
DEFAULT_BATCH_SIZE = 256
#: :data:`rerankit.server.logs.LOG_FORMATS`: ``serve --log-format``'s choices
LOG_FORMATS = ("text", "json")
#: :data:`rerankit.training.fine_tuning.MAX_HELD_OUT`: the largest ``train --held-out``
MAX_HELD_OUT = 0.5
#: :data:`rerankit.training.clicks.interleave.BY`: ``interleave-report --by``'s choices
INTERLEAVING_BY = ("session", "query")
#: :data:`rerankit.training.clicks.interleave.METHODS`: ``interleave-report --method``'s
INTERLEAVING_METHODS = ("optimized", "team-draft")
#: :data:`rerankit.training.clicks.log.STORE`: how a click log keeps a document's text
CLICK_LOG_STORES = ("text", "hash", "id")
#: :data:`rerankit.training.clicks.simulate_data.SHOWN`: the positions simulated users see
SIMULATED_SHOWN = 10
