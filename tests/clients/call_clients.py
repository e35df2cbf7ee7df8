"""Run by tests/server/test_clients.py with the interpreter of a venv holding third-party
rerank clients (``make test`` builds it: .venv-clients). Calls a rerankit service the way
each client's users do and prints, as JSON, the order each one got (input indices, best
first) or why it could not run.

    python call_clients.py URL API_KEY PIPELINE QUERY_AND_DOCUMENTS.json
"""

from __future__ import annotations

import asyncio
import json
import sys
import traceback


def cohere_v1(url, key, model, query, docs):
    import cohere

    out = cohere.Client(api_key=key, base_url=url).rerank(
        model=model, query=query, documents=docs, top_n=len(docs)
    )
    return [r.index for r in out.results]


def cohere_v2(url, key, model, query, docs):
    import cohere

    out = cohere.ClientV2(api_key=key, base_url=url).rerank(
        model=model, query=query, documents=docs, top_n=len(docs)
    )
    return [r.index for r in out.results]


def cohere_async(url, key, model, query, docs):
    import cohere

    async def both():
        v1 = await cohere.AsyncClient(api_key=key, base_url=url).rerank(
            model=model, query=query, documents=docs, top_n=len(docs)
        )
        v2 = await cohere.AsyncClientV2(api_key=key, base_url=url).rerank(
            model=model, query=query, documents=docs, top_n=len(docs)
        )
        a, b = [r.index for r in v1.results], [r.index for r in v2.results]
        if a != b:
            raise AssertionError(f"async v1 {a} and v2 {b} differ")
        return a

    return asyncio.run(both())


def langchain_cohere(url, key, model, query, docs):
    from langchain_cohere import CohereRerank
    from langchain_core.documents import Document

    reranker = CohereRerank(cohere_api_key=key, base_url=url, model=model, top_n=len(docs))
    kept = reranker.compress_documents(
        [Document(page_content=d, metadata={"i": i}) for i, d in enumerate(docs)], query
    )
    return [d.metadata["i"] for d in kept]


def litellm_rerank(url, key, model, query, docs, provider="cohere"):
    """``litellm.rerank`` through its Cohere provider, or (``provider="infinity"``) its
    Infinity one: Infinity's body (``documents``) on ``POST /rerank``, or
    (``provider="jina_ai"``) its Jina AI one: Jina's body on ``POST /v1/rerank``, or
    (``provider="voyage"``) its Voyage AI one: Voyage's body (``top_k``) there."""
    import litellm

    out = litellm.rerank(
        model=f"{provider}/{model}",
        query=query,
        documents=docs,
        top_n=len(docs),
        api_base=url,
        api_key=key,
    )
    got = [r["index"] for r in out.results]
    texts = [(r.get("document") or {}).get("text") for r in out.results]
    if texts != [docs[i] for i in got]:  # litellm asks for the documents back
        raise AssertionError(f"documents not returned as sent: {texts[:2]}")
    return got


def llama_index(url, key, model, query, docs):
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
    from llama_index.postprocessor.cohere_rerank import CohereRerank

    # its default model name (rerank-english-v3.0) unless the test names a pipeline
    options = {} if model is None else {"model": model}
    reranker = CohereRerank(api_key=key, base_url=url, top_n=len(docs), **options)
    nodes = [NodeWithScore(node=TextNode(text=d, id_=str(i))) for i, d in enumerate(docs)]
    kept = reranker.postprocess_nodes(nodes, query_bundle=QueryBundle(query))
    return [int(n.node.node_id) for n in kept]


CLIENTS = {
    "cohere_v1": cohere_v1,
    "cohere_v2": cohere_v2,
    "cohere_async": cohere_async,
    "langchain_cohere": langchain_cohere,
    "litellm": litellm_rerank,
    "litellm_infinity": lambda url, key, model, q, d: litellm_rerank(
        url, key, model, q, d, provider="infinity"
    ),
    "litellm_jina": lambda url, key, model, q, d: litellm_rerank(
        url, key, model, q, d, provider="jina_ai"
    ),
    "litellm_voyage": lambda url, key, model, q, d: litellm_rerank(
        url, key, model, q, d, provider="voyage"
    ),
    "llama_index": llama_index,
    "llama_index_default_model": lambda url, key, model, q, d: llama_index(url, key, None, q, d),
}


def main() -> None:
    url, key, model, path = sys.argv[1:5]
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    out = {}
    for name, client in CLIENTS.items():
        try:
            out[name] = {"order": client(url, key, model, data["query"], data["documents"])}
        except ImportError as exc:
            out[name] = {"missing": str(exc)}
        except Exception:
            out[name] = {"error": traceback.format_exc(limit=3)}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
