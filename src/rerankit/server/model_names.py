"""The model names a request may give: Cohere's public names (served by default), the
multilingual ones, Voyage AI's, and the 404 for a name the service does not serve, which
names the served ones (the closest first of the vendor whose API the request spoke) and
how the operator maps the client's name onto a pipeline."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Mapping

__all__ = [
    "COHERE",
    "COHERE_MODEL",
    "COHERE_MODELS",
    "MULTILINGUAL_PREFIX",
    "VOYAGE",
    "VOYAGE_MODEL",
    "family_of",
    "not_found",
    "says_multilingual",
    "unserved_defaults",
    "unserved_note",
]

#: Cohere's public rerank model names, which its clients send by default (LlamaIndex's
#: CohereRerank sends "rerank-english-v3.0"): aliases of the default pipeline beside those
#: ``[server.aliases]`` adds (which may point one elsewhere), unless that table is empty
COHERE_MODELS = (
    "rerank-v4.0-pro",
    "rerank-v4.0-fast",
    "rerank-v3.5",
    "rerank-english-v3.0",
    "rerank-multilingual-v3.0",
    "rerank-english-v2.0",
    "rerank-multilingual-v2.0",
)

#: how Cohere's multilingual model names begin
MULTILINGUAL_PREFIX = "rerank-multilingual-"

#: Voyage AI's model names: rerank-1, rerank-lite-1, rerank-2, rerank-2-lite, rerank-2.5, ...
#: (no ``v`` before the number, as Cohere's ``rerank-v3.5`` has)
VOYAGE_MODEL = re.compile(r"rerank-(lite-)?\d+(\.\d+)?(-lite)?")


#: Cohere's model names, those to come too: ``rerank-``, then ``english-`` or
#: ``multilingual-`` or neither, then ``v`` and a version (``rerank-v3.5``,
#: ``rerank-english-v3.0``, ``rerank-v4.0-pro``)
COHERE_MODEL = re.compile(r"rerank-(english-|multilingual-)?v\d+(\.\d+)?(-[a-z]+)?")

#: the API families a wire format speaks (its ``family``), whose model names a 404's "did
#: you mean" offers first: Cohere's (``/v1/rerank``, ``/v2/rerank``) and Voyage AI's
COHERE, VOYAGE = "cohere", "voyage"


def family_of(model: str) -> str | None:
    """:data:`COHERE` or :data:`VOYAGE` for a name shaped as that vendor's model names
    (:data:`COHERE_MODEL`, :data:`VOYAGE_MODEL`); None for any other (a pipeline's name, an
    operator's alias, a Hugging Face id)."""
    if model in COHERE_MODELS or COHERE_MODEL.fullmatch(model):
        return COHERE
    return VOYAGE if VOYAGE_MODEL.fullmatch(model) else None


#: words in a model name that say it reads many languages, besides ``multilingual``: BAAI's
#: ``bge-reranker-v2-m3`` and ``bge-m3``, models trained on mMARCO, and XLM-RoBERTa's kin
MULTILINGUAL_WORDS = frozenset({"m3", "mmarco", "xlm", "xlmr"})


def says_multilingual(model: str) -> bool:
    """Whether a model name says its model reads many languages: Cohere's
    ``rerank-multilingual-*``, any name with ``multilingual`` in it (Jina's
    ``jina-reranker-v2-base-multilingual``, an alias of the operator's own), or one with a
    word of :data:`MULTILINGUAL_WORDS` (``BAAI/bge-reranker-v2-m3``,
    ``cross-encoder/mmarco-mMiniLMv2-L12-H384-v1``)."""
    name = model.lower()
    if model.startswith(MULTILINGUAL_PREFIX) or "multilingual" in name:
        return True
    return not MULTILINGUAL_WORDS.isdisjoint(re.split(r"[^a-z0-9]+", name))


def unserved_defaults(aliases: Mapping[str, str], pipelines: Iterable[str]) -> list[str]:
    """Cohere's default names that neither ``aliases`` nor a pipeline serves: those an empty
    ``[server.aliases]`` table turned off."""
    served = set(aliases) | set(pipelines)
    return [name for name in COHERE_MODELS if name not in served]


def unserved_note(aliases: Mapping[str, str], pipelines: Iterable[str]) -> str | None:
    """What the startup log and ``rerankit check`` say of Cohere's default names that an
    empty ``[server.aliases]`` table turned off (None: every one is served)."""
    left_out = unserved_defaults(aliases, pipelines)
    if not left_out:
        return None
    return (
        f"Cohere's default model names not served ([server.aliases] is empty): "
        f"{', '.join(left_out)}; a client sending one gets a 404 (remove the empty table "
        "to serve them all, or add those you need to it)"
    )


def _alike(name: str, other: str) -> bool:
    """Whether ``other`` may be offered for ``name``: never across the line between
    multilingual and English names, nor from Voyage's names to another vendor's."""
    if says_multilingual(name) != says_multilingual(other):
        return False
    return not VOYAGE_MODEL.fullmatch(name) or VOYAGE_MODEL.fullmatch(other) is not None


def not_found(
    name: str | None,
    served: Iterable[str],
    aliases: Mapping[str, str],
    default: str | None,
    family: str | None = None,
) -> str:
    """The 404 for a request's model ``name`` that names none of the ``served`` pipelines:
    the closest name of its kind (of the request's API ``family``, :data:`COHERE` or
    :data:`VOYAGE`, when one is close: a typo'd ``rerank-v2.5`` sent in Cohere's shape is
    offered ``rerank-v3.5``, not Voyage's ``rerank-2.5``; else the closest of all), every
    pipeline and alias, and the ``[server.aliases]`` line that would serve it (said so when
    it is one of Cohere's default names, turned off by an empty table)."""
    served = sorted(served)
    kin = [n for n in [*served, *aliases] if name and _alike(name, n)]
    own = [n for n in kin if family is not None and family_of(n) == family]
    close = difflib.get_close_matches(name or "", own, n=1) or difflib.get_close_matches(
        name or "", kin, n=1
    )
    hint = f"did you mean {close[0]!r}? " if close else ""
    available = ", ".join(served)
    if aliases:
        available += "; aliases: " + ", ".join(
            f"{alias} ({target})" for alias, target in sorted(aliases.items())
        )
    shown = repr(name) if name is None or len(name) <= 100 else f"{name[:100]!r}..."
    # TOML basic strings take JSON's escapes; the name as sent, not as \\u escapes
    line = f"{json.dumps(name, ensure_ascii=False)} = {json.dumps(default or served[0])}"
    if name in COHERE_MODELS:
        fix = (
            f"{shown} is one of Cohere's default names, not served because the settings "
            f"file's [server.aliases] is empty: add {line} to it, or remove the empty table"
        )
    elif name and len(name) <= 100:
        fix = (
            f"to serve the name your client sends, add {line} to [server.aliases] "
            "of the settings file (rerankit serve --settings FILE)"
        )
    else:
        fix = (
            "to serve another name, map it onto a pipeline in the settings file's [server.aliases]"
        )
    return f"model {shown} not found; {hint}available: {available}; {fix}"
