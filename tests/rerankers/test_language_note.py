"""The hybrid's warning for a query in another language names the language the script or
the query's common words say, never suggests the language the caller set, and gives a fix
that works where it is read: a pipeline file for the command line, HybridReranker(...) in
Python, a settings-file pipeline for the service. English queries get none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rerankit.cli import main
from rerankit.errors import flags_first, serving
from rerankit.rerankers import HybridReranker
from rerankit.rerankers.language_note import language_note
from rerankit.scorers import JaccardScorer
from rerankit.text.detect import guess_language

SCRIPTS = {
    "注文をキャンセルする方法を教えてください": "ja",
    "配送状況を確認したい": "ja",
    "배송 조회 방법": "ko",
    "Как вернуть заказ": "ru",
    "كيف أعيد الطلب": "ar",
    "Πώς επιστρέφω μια παραγγελία": "el",
    "איך מחזירים הזמנה": "he",
    "如何修改收货地址": "zh",
}
LATIN = {
    "Wie lange dauert die Rücksendung einer Bestellung?": "de",
    "Comment réinitialiser mon mot de passe ?": "fr",
    "¿Cuánto cuesta el envío a Canarias?": "es",
    "Come posso restituire un ordine?": "it",
    "Quanto tempo demora a devolução do pedido?": "pt",
    "Hoe lang duurt het retourneren van een bestelling?": "nl",
    # one common word, told by the elision and the accents
    "Comment imprimer l'étiquette de retour ?": "fr",
    "Lieferzeit nach Österreich": "de",  # a keyword query: one common word and an umlaut
}
ENGLISH = [
    "What is the role of la in de novo synthesis?",
    "How does the immune system respond to vaccines?",
    "Die casting of aluminium: what is the yield?",
    "Rücksendung",  # one word: no evidence either way
    "Is Guillain-Barré syndrome more frequent after the vaccine?",
    "What does l'Oréal's naïve café study say about de novo mutations?",
]


@pytest.mark.parametrize(("query", "code"), [*SCRIPTS.items(), *LATIN.items()])
def test_the_language_guessed_is_the_scripts_or_the_common_words(query, code):
    assert guess_language(query).code == code


@pytest.mark.parametrize("query", ENGLISH)
def test_english_or_unclear_queries_are_not_called_another_language(query):
    assert guess_language(query) is None
    assert language_note(query, language="en", english_model=True) is None


def test_a_japanese_query_is_told_ja_and_a_fix_each_surface_can_use():
    query = "注文をキャンセルする方法を教えてください"
    python = language_note(query, language="en", english_model=True)
    assert "(Japanese: ja)" in python and "zh" not in python and "--model" not in python
    assert 'HybridReranker(model="sentence-transformers/paraphrase-multilingual' in python
    assert 'language="ja")' in python
    with flags_first():
        cli = language_note(query, language="en", english_model=True)
    assert "-r pipeline.toml" in cli and "--model" not in cli
    assert 'reranker = { type = "hybrid", model = "sentence-transformers/' in cli
    assert 'language = "ja" }' in cli
    with serving():
        served = language_note(query, language="en", english_model=True)
    assert '[pipelines.NAME] reranker = { type = "hybrid"' in served
    assert "HybridReranker" not in served and "-r " not in served


def test_the_language_the_caller_set_is_kept_and_not_suggested_again():
    note = language_note("배송 조회 방법", language="ko", english_model=True)
    assert "reads English only" in note and "lexical signals" not in note
    assert "query's language" not in note and 'language="ko"' in note
    # a multilingual model and the language set: nothing to say
    assert language_note("배송 조회 방법", language="ko", english_model=False) is None


def test_cyrillic_names_russian_as_an_example():
    note = language_note("Как вернуть заказ", language="en", english_model=True)
    assert "(Cyrillic script: e.g. ru)" in note


@pytest.mark.parametrize(("query", "code"), LATIN.items())
def test_a_latin_script_query_in_another_language_is_warned_under_english(query, code):
    note = language_note(query, language="en", english_model=True)
    assert note is not None and f"({code})" in note and f'language="{code}"' in note
    # its language set: the English-only model is still said, the language is not
    said = language_note(query, language=code, english_model=True)
    assert "reads English only" in said and "lexical signals" not in said
    assert language_note(query, language=code, english_model=False) is None
    # a multilingual model that still reads the words as English: set the language
    assert f'HybridReranker(language="{code}")' in language_note(
        query, language="en", english_model=False
    )


@pytest.mark.slow
def test_the_command_line_warns_of_a_german_query_under_the_default(tmp_path, capsys):
    """The reader's case: rank with the default hybrid (the bundled model) and a German
    query; the warning names de and a pipeline file, which rank takes."""
    docs = tmp_path / "de.jsonl"
    rows = ["Rücksendungen sind innerhalb von 30 Tagen möglich.", "Öffnungszeiten Montag."]
    docs.write_text("".join(json.dumps({"text": t}) + "\n" for t in rows), encoding="utf-8")
    query = "Wie lange dauert die Rücksendung einer Bestellung?"
    assert main(["rank", "-q", query, "-i", str(docs), "-k", "1"]) == 0
    err = capsys.readouterr().err
    assert "this query looks German (de)" in err and "-r pipeline.toml" in err
    assert 'language = "de" }' in err and "--model" not in err


ROOT = Path(__file__).resolve().parents[2]


def _queries(path: Path) -> list[str]:
    return [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines()]


def test_no_english_query_of_scifact_is_called_another_language():
    """The false-positive rate on real English queries (scifact's 1,109): zero."""
    path = ROOT.parent / "shared/data/beir/scifact/queries.jsonl"
    if not path.is_file():
        path = Path("/work/shared/data/beir/scifact/queries.jsonl")
    if not path.is_file():
        pytest.skip("scifact's queries are not here")
    queries = _queries(path)
    wrong = [q for q in queries if guess_language(q) is not None]
    assert len(queries) > 300 and wrong == []


def test_a_pipeline_of_another_language_warns_of_a_query_in_a_third():
    """A German pipeline (a Cohere multilingual name routed to it) given a Japanese, a
    French or an English query says so; a German one is its own."""
    japanese = language_note("返品の方法を教えてください", language="de", english_model=False)
    assert "(Japanese: ja)" in japanese and "read it as language 'de'" in japanese
    assert 'HybridReranker(language="ja")' in japanese
    french = language_note(
        "Quels sont les horaires d'ouverture du magasin ?", language="de", english_model=False
    )
    assert "looks French (fr)" in french and 'language="fr"' in french
    assert "looks English (en)" in language_note(
        "How do I return my order?", language="de", english_model=False
    )
    assert (
        language_note("Wie kann ich eine Rücksendung machen?", language="de", english_model=False)
        is None
    )
    # a language the detector cannot tell apart (Catalan may look Spanish): no guess
    assert (
        language_note("Com puc retornar una comanda?", language="ca", english_model=False) is None
    )


def test_a_hybrid_reading_german_warns_of_a_japanese_query_without_a_model():
    """The hybrid itself (a cheap scorer in the embedding model's place): the warning is
    in the result, the ranking is not failed."""
    hybrid = HybridReranker(embedding=JaccardScorer(name="embedding"), language="de")
    docs = ["Rücksendungen sind 30 Tage möglich.", "返品は30日以内に可能です。"]
    result = hybrid.rerank("返品の方法を教えてください", docs)
    assert len(result) == 2
    assert any("(Japanese: ja)" in w and "'de'" in w for w in result.warnings)
    assert not hybrid.rerank("Wie kann ich eine Rücksendung machen?", docs).warnings


@pytest.mark.parametrize("query", ["Wie kann ich eine Rücksendung machen?", "Rücksendung"])
def test_a_language_set_keeps_the_english_only_models_warning(query):
    """--language de sets the lexical analysis; the bundled model still reads English
    only, and says so (a sentence or a keyword alike)."""
    note = language_note(query, language="de", english_model=True)
    assert note is not None and "reads English only" in note
    assert 'model="sentence-transformers/paraphrase-multilingual' in note
    assert 'language="de"' in note and "lexical signals read it" not in note


def test_kanji_alone_may_be_japanese():
    assert str(guess_language("返品")) == "Chinese or Japanese: zh or ja"
    assert language_note("返品", language="ja", english_model=False) is None
    assert language_note("返品", language="zh", english_model=False) is None
    note = language_note("返品", language="en", english_model=True)
    assert 'language="zh"' in note and 'kanji alone may be Japanese: then "ja"' in note


def test_a_keyword_query_is_told_by_its_documents():
    german = ["Rücksendungen sind innerhalb von 30 Tagen möglich, die Kosten trägt der Kunde."]
    note = language_note("paypal", language="en", english_model=True, documents=german)
    assert note.startswith("these documents look German (de)")
    assert "the documents' language" in note and 'language="de"' in note
    english = ["You can return an order within 30 days; the customer pays for shipping."]
    assert language_note("paypal", language="en", english_model=True, documents=english) is None
    assert language_note("paypal", language="de", english_model=False, documents=german) is None
