"""Pipeline files say what is wrong with them, by key: a fusion whose scorers do not all
have a weight, an option a scorer or rule does not take (with the ones it does), a value of
the wrong kind, a key spelled as in Python; and the pipelines page quotes those errors as
the code gives them."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from rerankit import load, registry
from rerankit.config import create, to_toml
from rerankit.errors import ConfigError
from rerankit.ordering import MMR
from rerankit.rerankers import FusionReranker
from rerankit.scorers import BM25Scorer, JaccardScorer
from rerankit.text.analysis import Analyzer, AnalyzerOptions

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _fusion(*scorers: dict, **stage: object) -> dict:
    return {"stages": [{"name": "fuse", "scorers": list(scorers), **stage}]}


def _error(spec: dict) -> str:
    with pytest.raises(ConfigError) as caught:
        load(spec)
    return str(caught.value)


# --- weights --------------------------------------------------------------------------------


def test_a_fusion_with_a_weight_left_out_names_that_scorer():
    message = _error(
        _fusion(
            {"type": "bm25", "weight": 0.6},
            {"type": "jaccard"},
            {"type": "coverage", "weight": 0.4},
        )
    )
    assert message.startswith("stages[0].scorers[1].weight: scorer 'jaccard' has no weight")
    assert "or none for equal weights" in message


def test_a_fusion_without_weights_weighs_its_scorers_equally():
    spec = _fusion({"type": "bm25"}, {"type": "jaccard"})
    docs = ["solar power", "solar panels on roofs", "wind power", "coal"]
    from_file = load(spec).rerank("solar power", docs)
    in_python = FusionReranker([BM25Scorer(), JaccardScorer()]).rerank("solar power", docs)
    assert [d.score for d in from_file] == pytest.approx([d.score for d in in_python])
    weights = {k: v["weight"] for k, v in from_file.explain()[0]["strategies"].items()}
    assert weights == pytest.approx({"bm25": 0.5, "jaccard": 0.5})


@pytest.mark.parametrize(
    ("spec", "where"),
    [
        # a spec without a stages list is named as it is written, with no stages[0]
        ({"scorer": {"type": "bm25", "weight": 0.5}}, "scorer.weight"),
        (
            {"stages": [{"scorer": {"type": "bm25", "calibration": "x"}}]},
            "stages[0].scorer.calibration",
        ),
        (
            {"stages": [{"reranker": "bm25"}, {"scorer": {"type": "bm25", "weight": 1}}]},
            "stages[1].scorer.weight",
        ),
        (
            {"reranker": {"type": "hybrid", "embedding": {"type": "embedding", "weight": 1}}},
            "reranker.embedding.weight",
        ),
    ],
)
def test_a_weight_where_no_fusion_reads_it_is_an_error_not_ignored(spec, where):
    message = _error(spec)
    assert message.startswith(f"{where}: ")
    assert "read only in a fusion's list of scorers" in message


def test_weight_and_calibration_still_belong_to_a_fusions_scorers():
    fused = load(_fusion({"type": "bm25", "weight": 3.0}, {"type": "jaccard", "weight": 1.0}))
    result = fused.rerank("solar power", ["solar power", "wind power"])
    weights = {k: v["weight"] for k, v in result.explain()[0]["strategies"].items()}
    assert weights == pytest.approx({"bm25": 0.75, "jaccard": 0.25})


# --- options of a scorer or rule ------------------------------------------------------------


@pytest.mark.parametrize(
    ("table", "where", "message"),
    [
        (
            {"type": "bm25", "k": 1.2},
            "stages[0].scorer",
            "scorer 'bm25' has no option 'k' (did you mean 'k1'?); its options: k1, b, idf,",
        ),
        (  # a local model's options come from its LocalModelOptions
            {"type": "cross_encoder", "devise": "cpu"},
            "stages[0].scorer",
            "scorer 'cross_encoder' has no option 'devise' (did you mean 'device'?)",
        ),
        (
            {"type": "recency", "field": "date", "half_life_days": "a year"},
            "stages[0].scorer",
            "scorer 'recency': half_life_days must be a number, got 'a year'",
        ),
        (
            {"type": "embedding", "batch_size": "8"},
            "stages[0].scorer",
            "scorer 'embedding': batch_size must be an integer, got '8'",
        ),
        (
            {"type": "bm25", "lowercase": "yes"},
            "stages[0].scorer",
            "scorer 'bm25': lowercase must be true or false, got 'yes'",
        ),
    ],
)
def test_a_scorer_option_is_checked_by_key(table, where, message):
    assert _error({"stages": [{"scorer": table}]}).startswith(f"{where}: {message}")


_BUILT_IN = [
    (e.kind, e.name)
    for kind in ("scorer", "rule")
    for e in registry.entries(kind)
    if isinstance(e.factory, str) and e.factory.startswith(".")  # (not a test's own)
]


@pytest.mark.parametrize(("kind", "name"), _BUILT_IN, ids=[f"{k}:{n}" for k, n in _BUILT_IN])
def test_every_built_in_names_a_misspelt_option_and_lists_its_own(kind, name):
    """As docs/scorers.md promises: an unknown key is an error listing the valid ones, for
    every built-in scorer and rule (``jaccard`` and ``text`` raised a bare ``Analyzer.__init__()
    got an unexpected keyword argument``), so a scorer may not take a bare ``**options``."""
    stages = [{"scorer": {"type": "bm25"}}] if kind == "rule" else []
    stage = {kind: {"type": name, "sublinear": True}}
    message = _error({"stages": [*stages, stage]})
    assert re.search(
        rf"{name}'? (scorer )?has no (option|key) 'sublinear'; its (option|key)s: ", message
    ), message
    listed = message.rsplit("s: ", 1)[1].split(", ")
    assert "name" in listed or kind == "rule", message  # (every scorer takes a name)
    assert len(listed) >= 2 or listed == ["name"], message


def test_jaccard_and_text_take_the_analyzer_options_they_always_passed_on():
    for name in ("jaccard", "text"):
        message = _error({"scorer": {"type": name, "stemer": "porter"}})
        assert f"scorer {name!r} has no option 'stemer' (did you mean 'stemmer'?)" in message
        assert "language, lowercase, stopwords, stemmer, fold_accents" in message, message
        scorer = load({"scorer": {"type": name, "language": "fr", "fold_accents": False}}).scorer
        assert scorer.analyzer.terms("étiquettes") == ["étiquet"]
    with pytest.raises(ConfigError, match=r"scorer 'jaccard': lowercase must be true or false"):
        load({"scorer": {"type": "jaccard", "lowercase": "yes"}})


def test_the_analyzer_options_are_the_analyzers_own():
    own = [p.name for p in inspect.signature(Analyzer).parameters.values()]
    assert list(AnalyzerOptions.__annotations__) == own


def test_a_one_scorer_reranker_with_options_is_located_once():
    # `bm25` as a reranker is a registered one-scorer pipeline: its options are the scorer's
    message = "scorer 'bm25' has no option 'k' (did you mean 'k1'?)"
    stage = _error({"stages": [{"reranker": {"type": "bm25", "k": 1.2}}]})
    assert stage.startswith(f"stages[0].reranker: {message}")
    with pytest.raises(ConfigError) as caught:
        create("reranker", "bm25", k=1.2)
    assert str(caught.value).startswith(message)
    tuned = load({"stages": [{"reranker": {"type": "bm25", "k1": 0.5}}]})
    assert tuned.name == "bm25" and tuned.scorer.k1 == 0.5


def test_a_rule_option_is_checked_by_key():
    rule = lambda **r: _error({"stages": [{"scorer": {"type": "bm25"}}, {"rule": r}]})  # noqa: E731
    assert rule(type="deduplicate", treshold=0.8) == (
        "stages[1].rule: rule 'deduplicate' has no option 'treshold' (did you mean "
        "'threshold'?); its options: threshold, text_field"
    )
    assert rule(type="difficulty", window=2.5).endswith("window must be an integer, got 2.5")
    assert rule(type="mmr", lambda_="x").endswith("lambda_ must be a number, got 'x'")
    assert "give 'lambda' or 'lambda_', not both" in rule(type="mmr", **{"lambda": 1, "lambda_": 0})


def test_mmr_takes_lambda_as_a_file_writes_it_and_lambda_as_python_does():
    for key in ("lambda", "lambda_"):
        pipeline = load(
            {"stages": [{"scorer": {"type": "bm25"}}, {"rule": {"type": "mmr", key: 0.7}}]}
        )
        step = pipeline.stages[1].step
        assert isinstance(step, MMR) and step.lambda_ == 0.7
    assert create("rule", "mmr", **{"lambda": 0.2}).lambda_ == 0.2


def test_create_checks_options_for_python_callers_too():
    with pytest.raises(ConfigError, match="scorer 'recency': half_life_days must be a number"):
        create("scorer", "recency", half_life_days="a year")
    with pytest.raises(ConfigError, match=r"has no option 'k' \(did you mean 'k1'\?\)"):
        create("scorer", "bm25", k=1.2)


def test_options_of_a_factory_that_takes_any_pass_to_it_unchecked(monkeypatch):
    # llm_pointwise takes **options for the scorer: its own error still names the keyword
    pytest.importorskip("openai", reason="the openai extra")
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with pytest.raises(ConfigError, match="bogus"):
        create("scorer", "llm_pointwise", provider="openai", api_key_env=None, bogus=1)


# --- stage and top-level keys ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "hint"),
    [
        ("combination_method", "a file spells it 'method'"),
        ("normalization_method", "a file spells it 'normalization'"),
        ("weights", "give each scorer table its own weight"),
    ],
)
def test_a_python_spelling_in_a_stage_gets_the_files(key, hint):
    message = _error(_fusion({"type": "bm25"}, **{key: "x"}))
    assert message.startswith(f"stages[0]: a scorers stage has no key {key!r}: {hint}")


def test_weights_beside_a_reranker_are_shown_inside_its_table_as_documented():
    """A fusion stage's weights go on its scorer tables; a reranker's, inside its own table
    (docs/pipelines.md: reranker = { type = "hybrid", weights = ... })."""
    for reranker in ("hybrid", {"type": "hybrid"}):
        assert _error({"reranker": reranker, "weights": {"bm25_background": 0.7}}) == (
            "a reranker stage has no key 'weights': a reranker's weights go inside its table: "
            'reranker = { type = "hybrid", weights = { bm25_background = 0.7 } }'
        )
    assert "weights = { bm25_background = 0.7 }" in (DOCS / "pipelines.md").read_text()


def test_an_unknown_stage_key_lists_the_valid_ones():
    message = _error(_fusion({"type": "bm25"}, methd="rrf"))
    assert message == (
        "stages[0]: a scorers stage has no key 'methd' (did you mean 'method'?); its keys: "
        "name, keep, max_demotion, scorers, method, normalization, rrf_k, output_calibration"
    )


def test_the_fields_to_read_are_the_callers_not_the_files():
    for spec in (
        {"text_field": "body", "stages": [{"scorer": {"type": "bm25"}}]},
        {"text_field": "body", "scorer": {"type": "bm25"}},
    ):
        assert "per call: text_field= in Python, --text-field" in _error(spec)


def test_a_misspelt_normalization_is_located_at_its_key():
    message = _error(_fusion({"type": "bm25"}, normalization="zscore"))
    assert message.startswith("stages[0].normalization: unknown normalization method 'zscore'")


def test_the_pipelines_page_quotes_the_errors_the_code_gives():
    page = (DOCS / "pipelines.md").read_text(encoding="utf-8")
    page = " ".join(page.split())
    assert _error(_fusion({"type": "bm25"}, combination_method="rrf")) in page
    bm25 = {"scorer": {"type": "bm25"}}
    assert _error({"stages": [bm25, {**bm25, "keep": "eight"}]}) in page


def test_method_and_normalization_values_take_either_spelling():
    # cli.md: names use "-", files "_", and either spelling works for either
    docs = ["solar panels on the roof", "a roof of tiles", "wind power"]
    scorers = ({"type": "bm25"}, {"type": "jaccard"})
    underscored = load(_fusion(*scorers, method="weighted_average", normalization="z_score"))
    hyphened = load(_fusion(*scorers, method="weighted-average", normalization="z-score"))
    stage = hyphened  # a one-stage fusion loads as the FusionReranker itself
    assert isinstance(stage, FusionReranker) and stage.normalization_method == "z_score"
    assert stage.combination_method.value == "weighted_average"
    a, b = underscored.rerank("solar roof", docs), hyphened.rerank("solar roof", docs)
    assert [(r.index, r.score) for r in a] == [(r.index, r.score) for r in b]
    python = FusionReranker([BM25Scorer(), JaccardScorer()], normalization_method="min-max")
    assert python.normalization_method == "min_max"
    assert "unknown normalization method 'min-mux'" in _error(
        _fusion(*scorers, normalization="min-mux")
    )


def test_an_mmr_embed_that_is_not_a_function_is_refused_when_the_file_loads():
    spec = {"stages": [{"scorer": {"type": "bm25"}}, {"rule": {"type": "mmr", "embed": "x"}}]}
    message = _error(spec)
    assert "embed must be a function from texts to vectors, got 'x'" in message
    assert "'embedding' field" in message


def test_to_toml_refuses_an_object_and_checks_keys_as_loading_the_file_does(tmp_path):
    for built in (load("bm25"), BM25Scorer()):
        with pytest.raises(TypeError) as caught:
            to_toml(built)
        said = str(caught.value)
        assert said.startswith("to_toml takes a pipeline spec, a mapping of a pipeline file's")
        assert type(built).__name__ in said and "{'name': 'mine', 'reranker': 'hybrid'}" in said
    typo = {"name": "x", "scorer": {"type": "cross_encoder", "modle": "tiny-ce"}}
    before = {"name": "x", "scorer": {"type": "cross_encoder", "modle": "tiny-ce"}}
    with pytest.raises(ConfigError) as written:
        to_toml(typo)
    (tmp_path / "typo.toml").write_text(
        'name = "x"\nscorer = { type = "cross_encoder", modle = "m" }'
    )
    with pytest.raises(ConfigError) as loaded:
        load(tmp_path / "typo.toml")
    assert "has no option 'modle' (did you mean 'model'?)" in str(written.value)
    assert str(loaded.value).endswith(str(written.value).split("modle")[-1])
    assert typo == before
    with pytest.raises(ConfigError, match="did you mean 'hybrid'"):
        to_toml({"name": "x", "stages": [{"reranker": "hybrdi"}]})
    spec = {"stages": [{"reranker": "bm25", "keep": 30}, {"scorer": {"type": "jaccard"}}]}
    (tmp_path / "ok.toml").write_text(to_toml(spec, "a comment"))
    assert load(tmp_path / "ok.toml").name == "pipeline"


# --- options a rule or scorer requires, and Python keywords --------------------------------


@pytest.mark.parametrize(
    ("step", "needs"),
    [
        ({"rule": {"type": "cap"}}, "rule 'cap' needs field = ...; its options: field, limit"),
        ({"rule": {"type": "min_score"}}, "rule 'min_score' needs threshold = ..."),
        ({"scorer": {"type": "field"}}, "scorer 'field' needs field = ..."),
    ],
)
def test_a_required_option_left_out_is_named_as_a_file_writes_it(step, needs):
    message = _error({"stages": [{"scorer": {"type": "bm25"}}, step]})
    assert needs in message and message.startswith("stages[1].")
    assert "__init__" not in message and "positional" not in message


def test_an_unknown_option_beside_a_keyword_suggests_the_file_spelling():
    message = _error(
        {"stages": [{"scorer": {"type": "bm25"}}, {"rule": {"type": "mmr", "lamda": 0.5}}]}
    )
    assert "did you mean 'lambda'?" in message and "its options: lambda, k," in message
    assert load({"rule": {"type": "mmr", "lambda": 0.5}}) is not None


# --- the service's settings file given as a pipeline file -----------------------------------


def test_loading_the_services_settings_file_says_what_it_is(tmp_path):
    settings = tmp_path / "service.toml"
    settings.write_text('[server]\ndeadline = 10\n\n[pipelines.fast]\nreranker = "bm25"\n')
    with pytest.raises(ConfigError) as caught:
        load(str(settings))
    message = str(caught.value)
    assert message.startswith(f"{settings}: this is the service's settings file ([server], ")
    assert "not a pipeline file: a pipeline file has a reranker, scorer" in message
    assert f"`rerankit serve --settings {settings}` serves them" in message
    assert "ServerSettings.from_file" in message
    assert "give exactly one of" not in message
    nested = tmp_path / "outer.toml"  # named as another pipeline file's reranker: the same
    nested.write_text(f'[[stages]]\nreranker = "{settings}"\n')
    with pytest.raises(ConfigError, match=r"stages\[0\]\.reranker: .*the service.s settings"):
        load(nested)
