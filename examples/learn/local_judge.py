"""A local stand-in for an LLM judge: try `rerankit label` with no API key and no model.

It speaks OpenAI's chat-completions protocol at http://127.0.0.1:PORT/v1, as vLLM, Ollama
or llama.cpp's server do, through rerankit's own FakeLLMServer. For each call it reads the
query and the document from the pointwise prompt and answers the JSON a real judge gives,
{"id": "<the document's id>", "score": 0-10}, scoring by the share of the query's words the
document contains. Word overlap is what BM25 already knows, so its labels teach nothing a
real judge would: it is here to show what the server answers and to run label, tune and
train end to end.

    python examples/learn/local_judge.py --port 8011 &
    rerankit label --data examples/scifact-mini --judge examples/learn/local_judge.toml \
        --candidates 10 --max-queries 5 --out my-labels
"""

from __future__ import annotations

import argparse
import json
import re
import time

from rerankit.llm.testing import FakeLLMServer, RecordedRequest, Reply

QUERY = re.compile(r'Query \(a JSON string\): ("(?:[^"\\]|\\.)*")')
DOCUMENT = re.compile(r'Document ("(?:[^"\\]|\\.)*") \(a JSON string\): ("(?:[^"\\]|\\.)*")')


def words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def judge(request: RecordedRequest) -> Reply:
    """One pointwise judgment: the query and the document are JSON strings in the prompt."""
    query, document = QUERY.search(request.prompt), DOCUMENT.search(request.prompt)
    if query is None or document is None:  # a listwise judge, or docs_per_call above 1
        return Reply(status=400, text="this judge reads one document per call (llm_pointwise)")
    asked = words(json.loads(query.group(1)))
    doc_id, text = json.loads(document.group(1)), json.loads(document.group(2))
    score = round(10 * len(asked & words(text)) / max(1, len(asked)))
    return Reply(text=json.dumps({"id": doc_id, "score": score}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8011, help="8011, as local_judge.toml says")
    args = parser.parse_args()
    with FakeLLMServer(responder=judge, host=args.host, port=args.port) as server:
        print(f"judge listening at {server.openai_url} (Ctrl-C stops it)", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
