"""Adapters for LangChain and LlamaIndex (extras ``langchain`` and ``llamaindex``).

``from rerankit.integrations.langchain import RerankitCompressor`` and
``from rerankit.integrations.llamaindex import RerankitPostprocessor``; each wraps any
rerankit reranker, scorer, registered name or pipeline file.
"""
