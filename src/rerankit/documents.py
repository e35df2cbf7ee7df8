"""Input adapters: the one place the caller's items become Documents, and the one place
results are mapped back to the caller's kind of object.

Accepted items (in a list or any iterable; a pandas ``DataFrame`` gives its rows, as the
dicts ``df.to_dict("records")`` makes, and a result's ``index`` is the row's position):

* ``str`` and :class:`~rerankit.Document`;
* mappings (dicts): the text under ``text_field`` (or the ``text_fields`` joined as
  ``"field: value"`` lines), the optional id under ``id_field`` (by default ``id``, or
  ``_id`` as BEIR's ``corpus.jsonl`` has it); every other field becomes
  metadata. A ``title`` field, or the one ``title_field`` names, is the document's title
  (:mod:`rerankit.titles`: which values are titles; scorers read it on the line before the
  text, and passages start with it);
* LangChain ``Document`` s (``page_content``, ``metadata``, ``id``);
* LlamaIndex ``NodeWithScore`` s and nodes (``get_content()``, ``node_id``, ``metadata``); a
  node's retriever ``score`` becomes the ``first_stage_score``. Both read their metadata
  as a dict's fields: a ``title`` key is the title, ``text_fields`` may name metadata keys
  (and ``page_content`` or ``text``), and a ``text_field`` or ``id_field`` naming another
  place than theirs is an error (:meth:`_Adapter.framework_text`);
* :class:`~rerankit.RankedDocument` s (a result fed to an ordering rule);
* any object with a string attribute named ``text_field``, or anything a ``text_getter``
  reads: its public attributes (``__dict__`` and ``__slots__``) are read as a dict's fields
  are (``id_field``, ``title``, metadata).

**First-stage scores.** The score a first-stage retriever gave a document is read from
metadata ``first_stage_score`` (:data:`FIRST_STAGE_SCORE`). ``first_stage_field`` names
another field to take it from (dots walk into nested mappings), negated when
``first_stage_higher_is_better=False`` (distances), so ``first_stage_score`` is always
higher-is-better.

The caller's objects are never modified: dicts come back as new dicts, LangChain documents
and LlamaIndex nodes as copies, everything else as the caller's own object.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields, replace
from numbers import Real
from typing import Any

from .docfields import (
    FIRST_STAGE_SCORE,
    absent_field,
    field_names,
    field_value,
    with_first_stage,
)
from .errors import (
    InputError,
    InvalidDocumentError,
    keyword_flag,
    said_for,
    text_field_hint,
)
from .titles import TITLE, document_title, titled_text
from .types import Document, RankedDocument, repeated_ids

__all__ = [
    "FIRST_STAGE_SCORE",
    "PASS_FIRST_STAGE",
    "TITLE",
    "InputFields",
    "document_title",
    "field_names",
    "field_value",
    "output_for",
    "repeated_ids",
    "titled_text",
    "to_documents",
]

#: how a caller passes it, for the warnings of pipelines that read it
PASS_FIRST_STAGE = (
    f"a {FIRST_STAGE_SCORE!r} field on each document, or the one named by "
    f"{keyword_flag('first_stage_field')}, or by first_stage_field in a Cohere v1 request "
    "(/v1/rerank; a v2 request carries texts only)"
)
#: the field a document's id is read from unless the caller names another: one no
#: document has is fine (no ids), while a field the caller named that no document has is
#: an error, as a misspelt name would otherwise give every result an empty id
DEFAULT_ID_FIELD = "id"
#: where BEIR's corpus.jsonl keeps a document's id, read when a document has no ``id``
BEIR_ID = "_id"

_MISSING = object()


def _check_sequence(documents: Any) -> list[Any]:
    """The caller's items as a list: a pandas DataFrame's are its rows, as dicts (iterating
    one yields its column labels), recognised by type (rerankit does not import pandas)."""
    kinds = {(c.__module__.split(".")[0], c.__name__) for c in type(documents).__mro__}
    if ("pandas", "DataFrame") in kinds:
        return list(documents.to_dict("records"))
    got = type(documents).__name__
    if isinstance(documents, (str, bytes, Mapping, Document)):
        raise TypeError(f"documents must be a list of items, got a single {got}; wrap it in a list")
    if not isinstance(documents, Iterable):
        raise TypeError(f"documents must be a list, got {got}")
    return list(documents)


def _is_langchain(item: Any) -> bool:
    return isinstance(getattr(item, "page_content", None), str) and isinstance(
        getattr(item, "metadata", None), Mapping
    )


def _is_llama_scored(item: Any) -> bool:
    return hasattr(item, "score") and callable(
        getattr(getattr(item, "node", None), "get_content", None)
    )


def _is_llama_node(item: Any) -> bool:
    return callable(getattr(item, "get_content", None)) and hasattr(item, "node_id")


class _Adapter:
    """One pass over the caller's items with the options of one call."""

    def __init__(
        self,
        fields: InputFields,
        *,
        text_getter: Callable[[Any], str] | None,
        missing_text: str,
    ) -> None:
        if missing_text not in ("error", "empty"):
            raise ValueError(f"missing_text must be 'error' or 'empty', got {missing_text!r}")
        text_fields = fields.text_fields
        if text_fields is not None and (
            isinstance(text_fields, str)
            or not text_fields
            or not all(isinstance(f, str) for f in text_fields)
        ):
            raise InputError(
                f"text_fields must be a non-empty list of field names, got {text_fields!r}"
            )
        if text_fields is not None and fields.title_field != TITLE:
            raise InputError(
                f"title_field={fields.title_field!r} does not apply with text_fields, which "
                "reads each field as a 'field: value' line; name one text field instead"
            )
        self.text_field, self.id_field = fields.text_field, fields.id_field
        self.title_field = fields.title_field
        self.text_fields = list(text_fields) if text_fields is not None else None
        self.text_getter, self.lenient = text_getter, missing_text == "empty"
        #: the first document whose fields the id is read from, and whether any has it
        self.id_read: int | None = None
        self.id_found = False
        self.title_read: int | None = None  # the same for the title field
        self.title_found = False
        self.fields_read: int | None = None  # the same for text_fields: the names found
        self.fields_found: set[str] = set()
        self.text_at: int | None = None  # the first document that had its text_field

    def id_key(self, fields: Mapping[str, Any]) -> str:
        """The field a document's id is read from: ``id_field``, or BEIR's ``_id`` when
        ``id_field`` is the default and the document has ``_id`` but no ``id``."""
        if self.id_field == DEFAULT_ID_FIELD and self.id_field not in fields and BEIR_ID in fields:
            return BEIR_ID
        return self.id_field

    def read_id(self, fields: Mapping[str, Any], i: int) -> Any:
        """The id among a document's ``fields``, noting that it was looked for."""
        if self.id_read is None:
            self.id_read = i
        key = self.id_key(fields)
        self.id_found |= key in fields
        return fields.get(key)

    def titled(self, text: str, metadata: dict[str, Any], item: Mapping[str, Any], i: int) -> str:
        """``text`` with the title in ``title_field`` of a document's fields ``item``, which
        ``metadata`` (the Document's, a new dict) then holds as its ``title``."""
        if self.text_field == self.title_field:
            return text
        if self.title_read is None:
            self.title_read = i
        self.title_found |= self.title_field in item
        value = item.get(self.title_field)
        if self.title_field != TITLE:  # read as if the field were named 'title'
            metadata.pop(TITLE, None)
            if self.title_field in item:
                metadata[TITLE] = value
        return titled_text(text, value, i, self.title_field)

    def missing(self, i: int, message: str, field: str | None) -> str:
        if self.lenient:
            return ""
        raise InvalidDocumentError(f"document {i}: {message}", index=i, field=field)

    def text_of_mapping(self, item: Mapping[str, Any], i: int) -> str:
        if self.text_fields is not None:
            present = [k for k in self.text_fields if k in item]
            self.fields_read = i if self.fields_read is None else self.fields_read
            self.fields_found.update(present)
            if not present:
                return self.missing(
                    i, f"none of the text fields {self.text_fields} is present", None
                )
            return "\n".join(f"{k}: {item[k]}" for k in present)
        if self.text_field not in item:
            fields = ", ".join(map(repr, list(item)[:8])) or "none"
            hint = text_field_hint()  # the field is wrong, unless an earlier document has it
            if self.text_at is not None:
                hint = "; an earlier document has it: each document needs its text there"
            return self.missing(
                i,
                f"missing text field {self.text_field!r} (fields present: {fields}){hint}",
                self.text_field,
            )
        self.text_at = i if self.text_at is None else self.text_at
        text = item[self.text_field]
        if not isinstance(text, str):
            return self.missing(
                i,
                f"field {self.text_field!r} must be a string, got {type(text).__name__}",
                self.text_field,
            )
        return text

    def framework_text(
        self, i: int, kind: str, name: str, item: Any, metadata: dict[str, Any]
    ) -> str:
        """The text of a LangChain Document or a LlamaIndex node (``name``: its
        ``page_content``, or a node's ``get_content()``), read as a dict of its metadata and
        its text under ``name`` (a ``title`` key is the title, ``text_fields`` joins metadata
        keys); a ``text_field`` or ``id_field`` naming another place than theirs is an error."""
        own_id, own_text = ("id", name) if name == "page_content" else ("node_id", "get_content()")
        text_place = (
            f"its text is its {own_text} (and a {TITLE!r} key of its metadata its title; "
            f"text_fields=({TITLE!r}, {name!r}) reads metadata keys as lines of the text)"
        )
        for option, places, why in (
            ("text_field", ("text", name), text_place),
            ("id_field", ("id", own_id), f"its id is its {own_id}"),
        ):
            if getattr(self, option) not in places:
                raise InputError(
                    f"{option}={getattr(self, option)!r} does not apply to document {i}, a "
                    f"{kind}: {why}"
                )
        text = item.page_content if name == "page_content" else item.get_content()
        if self.text_fields is not None:
            return self.text_of_mapping({**metadata, name: text}, i)
        return self.titled(text, metadata, dict(metadata), i)

    def adapt(self, item: Any, i: int) -> Document:
        if isinstance(item, Document):
            return item if item.source is not None else replace(item, source=item)
        if isinstance(item, str):
            return Document(text=item, source=item)
        if isinstance(item, RankedDocument):  # it carries the text it was ranked by
            lenient, self.lenient = self.lenient, True
            try:
                inner = self.adapt(item.document, i)
            finally:
                self.lenient = lenient
            return replace(inner, text=inner.text or item.text, source=item)
        if self.text_getter is not None:
            text = self.text_getter(item)
            if not isinstance(text, str):
                raise InvalidDocumentError(
                    f"document {i}: text_getter returned {type(text).__name__}, expected str",
                    index=i,
                )
            metadata = dict(item) if isinstance(item, Mapping) else {}
            return Document(text=text, metadata=metadata, source=item)
        if isinstance(item, Mapping):
            skip = {self.id_key(item)} | ({self.text_field} if self.text_fields is None else set())
            metadata = {k: v for k, v in item.items() if k not in skip}
            text = self.text_of_mapping(item, i)
            if self.text_fields is None:
                text = self.titled(text, metadata, item, i)
            return Document(text=text, id=self.read_id(item, i), metadata=metadata, source=item)
        if _is_langchain(item):
            metadata = dict(item.metadata)
            text = self.framework_text(i, "LangChain Document", "page_content", item, metadata)
            return Document(text=text, id=getattr(item, "id", None), metadata=metadata, source=item)
        if _is_llama_scored(item):
            node = item.node
            metadata = dict(getattr(node, "metadata", None) or {})
            text = self.framework_text(i, "LlamaIndex node", "text", node, metadata)
            if isinstance(item.score, Real) and not isinstance(item.score, bool):
                metadata[FIRST_STAGE_SCORE] = float(item.score)
            node_id = getattr(node, "node_id", None)
            return Document(text=text, id=node_id, metadata=metadata, source=item)
        if _is_llama_node(item):
            metadata = dict(getattr(item, "metadata", None) or {})
            text = self.framework_text(i, "LlamaIndex node", "text", item, metadata)
            return Document(text=text, id=item.node_id, metadata=metadata, source=item)
        text = getattr(item, self.text_field, _MISSING)
        if isinstance(text, str) or (text is _MISSING and self.lenient):
            attributes = _public_attributes(item)
            attributes.pop(self.text_field, None)
            text = text if isinstance(text, str) else ""
            # a title attribute is read as a dict's title key
            text = self.titled(text, attributes, dict(attributes), i)
            identity = self.read_id(attributes, i)
            attributes.pop(self.id_field, None)
            return Document(text=text, id=identity, metadata=attributes, source=item)
        pair = ""  # a (query, document) pair, as CrossEncoder.predict takes: say how instead
        if (
            isinstance(item, (tuple, list))
            and len(item) == 2
            and all(isinstance(x, str) for x in item)
        ):
            pair = (
                " (a (query, document) pair? pass the query once and the documents as a list: "
                "rerank(query, [document, ...]))"
            )
        raise InvalidDocumentError(
            f"document {i}: unsupported type {type(item).__name__}; expected str, dict, "
            f"Document, a LangChain document, a LlamaIndex node, or an object with a string "
            f"{self.text_field!r} attribute{pair}",
            index=i,
        )


def _public_attributes(item: Any) -> dict[str, Any]:
    """An object's public attributes: its ``__dict__`` and its ``__slots__`` (a slotted class
    has no ``__dict__``), so dataclasses, pydantic models and slotted objects read alike."""
    attributes = {k: v for k, v in getattr(item, "__dict__", {}).items() if not k.startswith("_")}
    for cls in type(item).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if not name.startswith("_") and name not in attributes and hasattr(item, name):
                attributes[name] = getattr(item, name)
    return attributes


def to_documents(
    documents: Iterable[Any],
    fields: InputFields | None = None,
    *,
    text_getter: Callable[[Any], str] | None = None,
    missing_text: str = "error",
    **options: Any,
) -> list[Document]:
    """Adapt the caller's items to Documents (each keeps its original object as ``source``),
    read as ``fields`` (an :class:`InputFields`) says, or its options given as keywords
    (``text_field="body"``, ``first_stage_field="score"``, ...); ``text_getter`` reads the
    text of an object that is not a mapping.

    Raises :class:`~rerankit.errors.InvalidDocumentError` (a ``ValueError``) naming the
    document's index and the field when a text is missing or not a string
    (``missing_text="empty"`` reads such documents as empty text instead), when a
    ``first_stage_field`` value is not a number, and when a ``first_stage_field``, a name
    of ``text_fields``, an ``id_field`` other than ``"id"`` or a ``title_field`` other than
    ``"title"`` is in none of the documents (a misspelt name). The module doc lists the
    kinds of item accepted.
    """
    fields = (fields or InputFields()).with_options(**options)
    items = _check_sequence(documents)
    adapter = _Adapter(fields, text_getter=text_getter, missing_text=missing_text)
    docs = [adapter.adapt(item, i) for i, item in enumerate(items)]
    first = adapter.id_read
    if fields.id_field != DEFAULT_ID_FIELD and first is not None and not adapter.id_found:
        otherwise = f"to read ids from {DEFAULT_ID_FIELD!r} where there is one"
        raise absent_field("id field", fields.id_field, docs, first, otherwise)
    first = adapter.fields_read
    absent = [f for f in fields.text_fields or () if f not in adapter.fields_found]
    if absent and first is not None:  # (a document with none of them is an error above)
        where = said_for("text_fields", "--text-fields", "rank_fields")
        raise absent_field("text field", absent[0], docs, first, f"of {where}")
    first = adapter.title_read
    if fields.title_field != TITLE and first is not None and not adapter.title_found:
        otherwise = f"to read titles from {TITLE!r} where there is one"
        raise absent_field("title field", fields.title_field, docs, first, otherwise)
    if fields.first_stage_field is not None:
        docs = with_first_stage(docs, fields.first_stage_field, fields.first_stage_higher_is_better)
    return docs


@dataclass(frozen=True)
class InputFields:
    """How one rerank reads its documents and writes its results, in one object: the
    dict field holding the text (``text_field``) and the id (``id_field``), the field dict
    outputs get the score under (``score_field``), and the field holding the retriever's
    score (``first_stage_field``; ``first_stage_higher_is_better=False`` for distances),
    which becomes the documents' ``first_stage_score``, and the field holding the title
    (``title_field``), read on the line before the text. ``rerank()``, ``Reranker.rerank``,
    the CLI, the service and the integrations all take it (``fields=``), so an option added
    here reaches every one of them."""

    text_field: str = "text"
    id_field: str = DEFAULT_ID_FIELD
    score_field: str = "rerank_score"
    first_stage_field: str | None = None
    first_stage_higher_is_better: bool = True
    #: several fields joined as the text, instead of ``text_field``: each one a document
    #: has as a ``field: value`` line, in this order (``title`` is one more line, not read
    #: as the title): what Cohere's ``rank_fields`` asks for
    text_fields: tuple[str, ...] | None = None
    #: the field holding the title, read exactly as a ``title`` field is (not with text_fields)
    title_field: str = TITLE

    @classmethod
    @functools.cache
    def names(cls) -> frozenset[str]:
        """The option names (also the keyword arguments that set them)."""
        return frozenset(f.name for f in fields(cls))

    def with_options(self, **options: Any) -> InputFields:
        """A copy with ``options`` set (the names of :meth:`names`)."""
        return replace(self, **options) if options else self

    def read(self, documents: Iterable[Any]) -> list[Document]:
        """``documents`` as :class:`~rerankit.Document` s (see :func:`to_documents`)."""
        return to_documents(documents, self)


def output_for(doc: Document, score: float, *, score_field: str = "rerank_score") -> Any:
    """The caller-kind output for one document: a new dict with the score for mappings, a
    copy with the score in its metadata for LangChain documents, a copy with the new
    ``score`` for LlamaIndex ``NodeWithScore`` s, otherwise the caller's own object."""
    source = doc.source if doc.source is not None else doc
    if isinstance(source, RankedDocument):
        return source
    if isinstance(source, Mapping):
        new = dict(source)
        new[score_field] = score
        return new
    if _is_langchain(source) and hasattr(source, "model_copy"):
        return source.model_copy(update={"metadata": {**source.metadata, score_field: score}})
    if _is_llama_scored(source) and hasattr(source, "model_copy"):
        return source.model_copy(update={"score": score})
    return source
