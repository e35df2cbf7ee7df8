"""The hybrid's warning for text it reads poorly: a query (or, when the query says nothing,
its documents) clearly in another language than the pipeline reads
(:func:`rerankit.text.detect.guess_language`, :func:`rerankit.text.detect.differs`), or
any text of a pipeline whose embedding model, the bundled all-MiniLM-L6-v2, reads English
only while its language is another or the text is. It names the language guessed and a
remedy that works where it is read: a pipeline file for the command line,
``HybridReranker(...)`` in Python, a pipeline of the settings file for a client of the
service (:func:`rerankit.errors.said_for`). It only reads strings: cheap, and it never
fails a rerank."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import islice

from ..errors import said_for
from ..text.detect import Guess, differs, guess_language
from ..text.language import non_latin_share

__all__ = ["MULTILINGUAL_EMBEDDING", "language_note"]

#: the multilingual embedding model the warning suggests
MULTILINGUAL_EMBEDDING = "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2"
#: how much of the documents is read when the query's language cannot be told
SAMPLE_DOCUMENTS, SAMPLE_CHARS = 8, 500


def _read(text: str, language: str) -> tuple[bool, Guess | None]:
    """Whether ``text`` is mostly in another script than Latin, and its language guessed
    (English too, where the pipeline reads another ``language``)."""
    return non_latin_share(text) > 0.5, guess_language(text, english=language != "en")


def language_note(
    query: str, *, language: str, english_model: bool, documents: Iterable[str] = ()
) -> str | None:
    """The warning for ``query`` reranked by a hybrid whose lexical signals read
    ``language`` and whose embedding model reads English only (``english_model``), or
    None. It is said when the query's language is clearly another than ``language`` (the
    first ``documents`` are read when the query's cannot be told: a keyword query), and
    when the model reads English only while the text is in another script, is guessed to
    be in another language, or ``language`` is not English and the text is not clearly
    English (a German pipeline with an English model reads German poorly)."""
    subject = "query"
    other_script, guess = _read(query, language)
    if guess is None and not other_script:
        sample = " ".join(t[:SAMPLE_CHARS] for t in islice(documents, SAMPLE_DOCUMENTS))
        doc_script, doc_guess = _read(sample, language)
        if doc_guess is not None or doc_script:
            subject, other_script, guess = "documents", doc_script, doc_guess
    foreign = guess is not None and guess.code != "en"
    wrong = guess is not None and differs(guess, language)
    # the English-only model reads poorly text in another script or language, or text of
    # a non-English pipeline that is not clearly English
    model = english_model and (other_script or foreign or (guess is None and language != "en"))
    if not (wrong or model):
        return None
    this = "this query is" if subject == "query" else "these documents are"
    if other_script:
        what = f"{this} mostly in another script" + (f" ({guess})" if guess else "")
    elif guess is not None:
        what = f"{this.rsplit(' ', 1)[0]} look{'s' * (subject == 'query')} {guess.name} "
        what += f"({guess.code})"
    else:
        what = f"the lexical signals read {language!r}"
    problems = ["the bundled all-MiniLM-L6-v2 reads English only"] if model else []
    if wrong:
        read = "English" if language == "en" else f"language {language!r}"
        them = "it" if subject == "query" else "them"
        problems.append(f"the lexical signals read {them} as {read}")
    # the language the remedy keeps: the guessed one, or the one the caller set
    code = guess.code if wrong and guess else None if language == "en" else language
    also = guess.also if wrong and guess else None
    whose = f"{subject}'s" if subject == "query" else "documents'"
    remedy = _remedy(model, code, whose if wrong else None)
    if also:
        remedy += f'; kanji alone may be Japanese: then "{also}" in place of "{code}"'
    return f"{what}, but {' and '.join(problems)}: {remedy}"


def _remedy(english_model: bool, code: str | None, whose: str | None) -> str:
    """How to rerank with a multilingual model (when ``english_model``) and the language
    ``code`` (the query's or documents', ``whose``, when the hybrid reads another), said
    for where it is read."""
    if english_model:
        what = "use a multilingual embedding model"
        what += f" and the {whose} language" if whose else ""
    else:
        what = "set the " + (whose or "query's") + " language"
    keys = ([f'model = "{MULTILINGUAL_EMBEDDING}"'] if english_model else []) + (
        [f'language = "{code}"'] if code else []
    )
    python = ", ".join(k.replace(" = ", "=") for k in keys)
    table = f'{{ type = "hybrid", {", ".join(keys)} }}'
    return what + said_for(
        f" (HybridReranker({python}))",
        f" (a pipeline file, -r pipeline.toml, holding: reranker = {table})",
        " (serve a pipeline of the settings file, and send its name as the request's model: "
        f"[pipelines.NAME] reranker = {table})",
    )
