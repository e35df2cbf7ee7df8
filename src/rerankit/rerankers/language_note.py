"""The hybrid's warning for a query it reads poorly: one the bundled all-MiniLM-L6-v2
(English only) embeds, or that the lexical signals read as English, when the query is
clearly in another language (:func:`rerankit.text.detect.guess_language`). It names the
language guessed and a remedy that works where it is read: a pipeline file for the
command line, ``HybridReranker(...)`` in Python, a pipeline of the settings file for a
client of the service (:func:`rerankit.errors.said_for`)."""

from __future__ import annotations

from ..errors import said_for
from ..text.detect import guess_language
from ..text.language import non_latin_share

__all__ = ["MULTILINGUAL_EMBEDDING", "language_note"]

#: the multilingual embedding model the warning suggests
MULTILINGUAL_EMBEDDING = "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2"


def language_note(query: str, *, language: str, english_model: bool) -> str | None:
    """The warning for ``query`` reranked by a hybrid whose lexical signals read
    ``language`` and whose embedding model reads English only (``english_model``), or
    None: when the query looks English (or its language cannot be told), or the hybrid
    already reads its language with a model that is not English only. A query in another
    script always gets it from an English-only model, even when no language is guessed;
    a Latin-script one only when its language is guessed and the hybrid reads English."""
    other_script = non_latin_share(query) > 0.5
    guess = guess_language(query)
    wrong_language = guess is not None and language == "en"
    if not (english_model or wrong_language) or not (other_script or wrong_language):
        return None  # a Latin-script query whose language the caller set: theirs to choose
    if other_script:
        what = "this query is mostly in another script" + (f" ({guess})" if guess else "")
    else:
        assert guess is not None
        what = f"this query looks {guess.name} ({guess.code})"
    problems = ["the bundled all-MiniLM-L6-v2 reads English only"] if english_model else []
    if wrong_language:
        problems.append("the lexical signals read it as English")
    # the language the remedy keeps: the guessed one, or the one the caller set
    code = guess.code if wrong_language and guess else None if language == "en" else language
    return f"{what}, but {' and '.join(problems)}: {_remedy(english_model, code, wrong_language)}"


def _remedy(english_model: bool, code: str | None, wrong_language: bool) -> str:
    """How to rerank with a multilingual model (when ``english_model``) and the language
    ``code`` (the query's, when the hybrid reads another: ``wrong_language``), said for
    where it is read."""
    if english_model:
        what = "use a multilingual embedding model"
        what += " and the query's language" if wrong_language else ""
    else:
        what = "set the query's language"
    keys = ([f'model = "{MULTILINGUAL_EMBEDDING}"'] if english_model else []) + (
        [f'language = "{code}"'] if code else []
    )
    python = ", ".join(k.replace(" = ", "=") for k in keys)
    table = f'{{ type = "hybrid", {", ".join(keys)} }}'
    return what + said_for(
        f" (HybridReranker({python}))",
        f" (a pipeline file, -r pipeline.toml, holding: reranker = {table})",
        f" (serve a pipeline of the settings file: [pipelines.NAME] reranker = {table})",
    )
