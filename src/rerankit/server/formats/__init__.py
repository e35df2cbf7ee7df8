"""The service's wire formats, one module each (``path``, ``summary``, ``description``,
``Request``, ``Response``, ``call``, ``respond``; see
:class:`~rerankit.server.formats.base.WireFormat`). Adding a format is one module here plus
its name in :data:`FORMATS`. Formats that share a path are told apart by their body: each
but the first of them has ``accepts(data)`` (TEI's and Infinity's ``/rerank``, Cohere's and
Voyage's ``/v1/rerank``)."""

from . import cohere_v1, cohere_v2, explain, infinity, tei, voyage

FORMATS = (cohere_v1, voyage, cohere_v2, tei, infinity, explain)

__all__ = ["FORMATS"]
