"""A Dataset in memory written as a BEIR-layout folder reads back as it was, and tune, which
reads folders, says how to get one from a Dataset (it raised a bare TypeError)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rerankit.errors import InputError
from rerankit.eval.data import Dataset, load_beir
from rerankit.training import tune

EXAMPLE = Path(__file__).parents[2] / "examples" / "scifact-mini"

texts = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=30
).filter(str.strip)
ids = st.text(alphabet="abcdefghij0123456789-_", min_size=1, max_size=6)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    docs=st.dictionaries(ids, st.tuples(st.text(max_size=10), texts), min_size=1, max_size=5),
    query=texts,
    grade=st.integers(min_value=0, max_value=3),
)
def test_a_dataset_written_reads_back_as_it_was(tmp_path_factory, docs, query, grade):
    corpus = {d: {"title": title, "text": text} for d, (title, text) in docs.items()}
    first = next(iter(corpus))
    data = Dataset("mine", corpus, {"q1": query}, {"q1": {first: grade}})
    folder = data.write(tmp_path_factory.mktemp("written") / "mine", split="train")
    back = load_beir(folder, "train")
    assert back.queries == {"q1": query}
    assert back.qrels == {"q1": {first: grade}}
    assert {d: back.text(d) for d in back.corpus} == {d: data.text(d) for d in data.corpus}


def test_a_loaded_collection_written_again_is_the_same(tmp_path):
    data = load_beir(EXAMPLE, "train")
    back = load_beir(data.write(tmp_path / "again", split="train"), "train")
    assert (back.corpus, back.queries, back.qrels) == (data.corpus, data.queries, data.qrels)


def test_write_refuses_a_folder_that_holds_a_collection_and_a_split_that_is_a_path(tmp_path):
    data = load_beir(EXAMPLE, "train").sample(2)
    data.write(tmp_path / "once", split="train")
    with pytest.raises(InputError, match=r"already holds corpus\.jsonl; write to a new folder"):
        data.write(tmp_path / "once", split="test")
    with pytest.raises(InputError, match="split must be a plain name"):
        data.write(tmp_path / "other", split="test:odd")


def test_tune_given_a_dataset_says_how_to_write_it_as_a_folder(tmp_path):
    data = load_beir(EXAMPLE, "train")
    with pytest.raises(
        InputError,
        match=r"data: tune reads a BEIR-layout folder.*write\('my-train', split='train'\)",
    ):
        tune(data, out=tmp_path / "t.toml")
    with pytest.raises(InputError, match=r"test_data: .*split='test'"):
        tune(EXAMPLE, test_data=data, out=tmp_path / "t.toml")
