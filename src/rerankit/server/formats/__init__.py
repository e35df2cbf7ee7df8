"""The service's wire formats, one module each (``path``, ``Request``, ``call``,
``respond``; see :class:`~rerankit.server.formats.base.WireFormat`). Adding a format is one
module here plus its name in :data:`FORMATS`."""

from . import cohere_v1, cohere_v2, explain, tei

FORMATS = (cohere_v1, cohere_v2, tei, explain)

__all__ = ["FORMATS"]
