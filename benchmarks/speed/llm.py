"""LLM reranking against a local server with simulated latency (no network, no key).

The server (``rerankit.llm.testing.FakeLLMServer``) speaks OpenAI's ``chat/completions``
protocol and waits ``--latency`` seconds (default 0.2) before each answer; rerankit talks to
it through the real ``openai`` SDK. From one run it prints:

* pointwise scoring of 50 documents one call at a time (``max_concurrency=1``) against
  rerankit's default concurrency (target: at least 8x faster);
* the calls a listwise rerank of 100 documents makes (window 20, step 10: 9 expected);
* the calls the same reranks make when repeated (0 expected: every judgment is cached);
* the cost of the judgment cache itself: a 100-document pointwise rerank at 0 ms latency
  with an empty SQLite cache (every judgment looked up and written) against no cache,
  medians of interleaved rounds (target: within 1.3x).

Run: ``python -m benchmarks.speed.llm``.
"""

from __future__ import annotations

import argparse
import json
import time

from rerankit.cache import JudgmentCache
from rerankit.llm import OpenAIClient
from rerankit.llm.testing import FakeLLMServer, RecordedRequest, Reply
from rerankit.rerankers import ScorerReranker
from rerankit.scorers import LLMListwiseScorer, LLMPointwiseScorer


def answer(request: RecordedRequest) -> Reply:
    """Pointwise: a score from the document's length; listwise: the window reversed."""
    if "Chunks (JSON array):" in request.prompt:
        chunks = request.prompt.split("Chunks (JSON array):\n", 1)[1].split("\n\nQuestion", 1)[0]
        n = len(json.loads(chunks))
        return Reply(
            text=json.dumps(
                {
                    "reranked_indices": list(range(n - 1, -1, -1)),
                    "is_rejected": False,
                    "rejection_reason": "",
                }
            )
        )
    return Reply(text=json.dumps({"id": "x", "score": len(request.prompt) % 11}))


def timed(reranker: ScorerReranker, query: str, docs: list[str]) -> tuple[float, dict]:
    start = time.perf_counter()
    result = reranker.rerank(query, docs)
    return time.perf_counter() - start, dict(result.usage)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2)
    args = parser.parse_args()
    docs50 = [f"Document {i}: " + "text " * (i % 7 + 3) for i in range(50)]
    docs100 = [f"Passage {i} about topic {i % 9}" for i in range(100)]
    query = "which documents matter"

    with FakeLLMServer(responder=answer, latency=args.latency) as server:
        client = OpenAIClient(base_url=server.openai_url, model="bench")
        sequential = ScorerReranker(LLMPointwiseScorer(client, cache=False, max_concurrency=1))
        concurrent = ScorerReranker(LLMPointwiseScorer(client, cache=False))
        t_seq, u_seq = timed(sequential, query, docs50)
        t_con, u_con = timed(concurrent, query, docs50)
        default_concurrency = concurrent.scorer.runner.limits.concurrency.limit
        print(f"simulated latency {args.latency * 1e3:.0f} ms per call\n")
        print("pointwise, 50 documents")
        print(f"  one call at a time                 {t_seq:6.2f} s   {u_seq['calls']} calls")
        print(
            f"  rerankit default (concurrency {default_concurrency})  {t_con:6.2f} s   "
            f"{u_con['calls']} calls   {t_seq / t_con:.1f}x faster"
        )

        cache = JudgmentCache(":memory:")
        listwise = ScorerReranker(LLMListwiseScorer(client, cache=cache))
        t_list, u_list = timed(listwise, query, docs100)
        t_again, u_again = timed(listwise, query, docs100)
        pointwise_cached = ScorerReranker(LLMPointwiseScorer(client, cache=cache))
        timed(pointwise_cached, query, docs50)
        t_pw_again, u_pw_again = timed(pointwise_cached, query, docs50)
        print("\nlistwise, 100 documents, window 20, step 10")
        print(f"  first rerank      {u_list['calls']:3d} calls   {t_list:6.2f} s")
        print(
            f"  repeated rerank   {u_again['calls']:3d} calls   {t_again:6.2f} s   "
            f"({u_again['cache_hits']} cache hits)"
        )
        print("\npointwise, 50 documents, repeated with the judgment cache")
        print(
            f"  repeated rerank   {u_pw_again['calls']:3d} calls   {t_pw_again:6.2f} s   "
            f"({u_pw_again['cache_hits']} cache hits)"
        )

    cache_cost(query, [f"Passage {i}: " + "words " * (i % 13 + 5) for i in range(100)])


def cache_cost(query: str, docs: list[str], rounds: int = 7) -> None:
    import statistics
    import tempfile
    from pathlib import Path

    with FakeLLMServer(responder=answer) as server, tempfile.TemporaryDirectory() as tmp:
        client = OpenAIClient(base_url=server.openai_url, model="bench")
        times: dict[str, list[float]] = {"off": [], "on": []}
        for r in range(rounds):  # interleaved: machine noise hits both alike
            off = ScorerReranker(LLMPointwiseScorer(client, cache=False))
            on = ScorerReranker(LLMPointwiseScorer(client, cache=Path(tmp) / f"c{r}.sqlite"))
            times["off"].append(timed(off, query, docs)[0])
            times["on"].append(timed(on, query, docs)[0])
    off, on = (statistics.median(times[k]) for k in ("off", "on"))
    print("\npointwise, 100 documents, 0 ms latency: the judgment cache's own cost")
    print(f"  cache off                     {off:6.2f} s")
    ratio = on / off
    print(f"  cache on (empty SQLite file)  {on:6.2f} s   {ratio:.2f}x the time of cache off")


if __name__ == "__main__":
    main()
