"""Adapters for LangChain and LlamaIndex (extras ``langchain`` and ``llamaindex``), and
for a FastAPI app that reranks in its own process (no extra).

``from rerankit.integrations.langchain import RerankitCompressor`` and
``from rerankit.integrations.llamaindex import RerankitPostprocessor``; each wraps any
rerankit reranker, scorer, registered name or pipeline file.
``from rerankit.integrations.fastapi import cancel_on_disconnect``: a rerank cancelled
when its client disconnects.
"""
