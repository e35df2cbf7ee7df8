"""``rerankit check`` of a pipeline whose hybrid reads another language than English with
the bundled English-only model says so once, in the words ``rank`` warns with on each
query (:func:`rerankit.rerankers.language_note.language_note`): it said nothing."""

from __future__ import annotations

from rerankit.cli.main import main
from rerankit.errors import flags_first
from rerankit.rerankers.hybrid import HybridReranker
from rerankit.rerankers.language_note import language_note

FRENCH = 'reranker = { type = "hybrid", language = "fr" }\n'
CASCADE = (
    '[[stages]]\nreranker = "bm25"\nkeep = 50\n\n'
    '[[stages]]\nreranker = { type = "hybrid", language = "de" }\n'
)
MULTILINGUAL = (
    'reranker = { type = "hybrid", language = "fr", '
    'model = "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2" }\n'
)


def _check(capsys, *files) -> list[str]:
    assert main(["check", *map(str, files)]) == 0  # warned, not failed
    return [line for line in capsys.readouterr().out.splitlines() if ": warning: " in line]


def test_a_french_hybrid_with_the_english_model_is_warned_of_once_as_rank_words_it(
    tmp_path, capsys
):
    french = tmp_path / "fr.toml"
    french.write_text(FRENCH)
    warned = [w for w in _check(capsys, french) if "English only" in w]
    said = "the lexical signals read 'fr', but the bundled all-MiniLM-L6-v2 reads English only"
    assert len(warned) == 1 and warned[0].startswith(f"{french}: warning: {said}: "), warned
    # rank's words for a query whose language cannot be told, said where check is read
    with flags_first():
        expected = language_note("", language="fr", english_model=True)
    assert warned[0] == f"{french}: warning: {expected}"
    assert HybridReranker(language="fr").language_setting_note() is not None


def test_a_hybrid_stage_is_named_and_english_or_a_multilingual_model_is_not_warned(
    tmp_path, capsys
):
    cascade, english, multi = tmp_path / "c.toml", tmp_path / "en.toml", tmp_path / "m.toml"
    cascade.write_text(CASCADE)
    english.write_text('reranker = "hybrid"\n')
    multi.write_text(MULTILINGUAL)
    warned = [w for w in _check(capsys, cascade, english, multi) if "English only" in w]
    assert len(warned) == 1, warned
    assert warned[0].startswith(
        f"{cascade}: warning: stage 'hybrid': the lexical signals read 'de'"
    )


def test_a_settings_file_s_pipeline_is_warned_of_by_its_name(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "fr.toml").write_text(FRENCH)
    settings = tmp_path / "service.toml"
    settings.write_text('[pipelines.french]\nreranker = "fr.toml"\n')
    main(["check", str(settings)])
    out = capsys.readouterr().out
    said = f"{settings}: warning: pipeline 'french': the lexical signals read 'fr', but the"
    assert out.count(said) == 1, out
