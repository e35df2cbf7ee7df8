"""Cache keys: every part that changes an answer changes its key, nothing volatile gets in,
the same request gives the same key in every process, tenants never share; pipeline
fingerprints follow the spec and the model's files, not where the model runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rerankit.cache import (
    CACHE_FORMAT,
    answer_key,
    canonical_json,
    embedding_key,
    pipeline_fingerprint,
)

REQUEST = {
    "query": "solar panels",
    "documents": ["Solar panels turn light into power", {"text": "wind", "title": "Energy"}],
    "options": {"top_k": 3, "fields": ["title", "text"], "return_documents": True},
}
SRC = Path(__file__).resolve().parents[2] / "src"


def key(fingerprint="f" * 32, tenant="key-1", **changes):
    parts = {**REQUEST, **changes}
    return answer_key(fingerprint, tenant=tenant, **parts)


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=5),
)


@settings(max_examples=60, deadline=None)
@given(
    options=st.dictionaries(st.sampled_from(["top_k", "fields", "mode", "x"]), scalars, max_size=4),
    name=st.sampled_from(["top_k", "fields", "mode", "x", "new"]),
    value=scalars,
)
def test_every_option_that_differs_changes_the_key(options, name, value):
    changed = {**options, name: value}
    same = canonical_json(changed) == canonical_json(options)
    assert (key(options=options) == key(options=changed)) == same


def test_each_part_of_a_request_is_in_its_key():
    base = key()
    variants = [
        key(query="solar panel"),
        key(documents=list(reversed(REQUEST["documents"]))),  # order matters
        key(documents=[*REQUEST["documents"], "one more"]),
        key(documents=[REQUEST["documents"][0], {"text": "wind", "title": "Energy!"}]),
        key(options={**REQUEST["options"], "top_k": 4}),
        key(options={**REQUEST["options"], "top_k": 3.5}),
        key(options={**REQUEST["options"], "return_documents": 1}),  # True is not 1
        key(tenant="key-2"),
        key(tenant=None),
        key(fingerprint="e" * 32),
    ]
    assert len({base, *variants}) == len(variants) + 1
    # what does not change an answer does not change its key: the order of a mapping's fields
    reordered = [REQUEST["documents"][0], {"title": "Energy", "text": "wind"}]
    assert key(documents=reordered) == base
    assert key(options=dict(reversed(REQUEST["options"].items()))) == base


def test_tenants_never_share_keys_and_the_api_key_is_not_in_them():
    a, b = key(tenant="secret-key-a"), key(tenant="secret-key-b")
    assert a != b and a.split(":")[:1] == b.split(":")[:1]  # same pipeline, other tenant
    assert "secret" not in a and len(a.split(":")) == 3


def test_volatile_or_unknown_values_are_refused_not_stringified():
    class Handle:  # str() of it would hold its address: a key that never hits
        pass

    with pytest.raises(TypeError, match=r"request.options.trace: Handle is not plain data"):
        key(options={"trace": Handle()})
    with pytest.raises(TypeError, match=r"request.documents\[1\]"):
        key(documents=["a", object()])
    with pytest.raises(TypeError, match="keys must be strings"):
        key(options={1: "x"})


def test_the_same_request_gives_the_same_key_in_another_process():
    code = (
        "import json, sys; from rerankit.cache import answer_key, embedding_key;"
        "r = json.loads(sys.argv[1]);"
        "print(answer_key('f' * 32, tenant='key-1', **r)); print(embedding_key('m', 'text é'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(REQUEST)],
        env={"PYTHONPATH": str(SRC), "PYTHONHASHSEED": "123"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert out == [key(), embedding_key("m", "text é")]


def test_fingerprints_follow_the_spec_and_the_model_files(tmp_path, bert_dir):
    import shutil

    from rerankit import load

    spec = {"scorer": {"type": "cross_encoder", "model": str(bert_dir)}}
    first = pipeline_fingerprint(spec, load(spec))
    assert first == pipeline_fingerprint(spec, load(spec))  # built twice: the same
    assert len(first) == 32
    # where the model runs is no part of it; what it reads is
    threads = {"scorer": {**spec["scorer"], "threads": 1}}
    assert pipeline_fingerprint(spec, load(threads)) == first
    length = {"scorer": {**spec["scorer"], "max_length": 16}}
    assert pipeline_fingerprint(spec, load(length)) != first
    assert pipeline_fingerprint("bm25", load("bm25")) != pipeline_fingerprint(
        "jaccard", load("jaccard")
    )
    # the same files elsewhere: the same model; one byte changed: another
    copy = tmp_path / "copy"
    shutil.copytree(bert_dir, copy)
    moved = {"scorer": {"type": "cross_encoder", "model": str(copy)}}
    digest = _identities(load(moved))[0]["model_id_files"]
    assert digest == _identities(load(spec))[0]["model_id_files"]
    _flip_last_byte(next(copy.glob("*.safetensors")))
    assert _identities(load(moved))[0]["model_id_files"] != digest


def test_a_model_copied_anew_keeps_its_fingerprint_and_retrained_gets_another(tmp_path, tiny_st):
    import os
    import shutil

    from rerankit import load

    folder = tmp_path / "model"
    shutil.copytree(tiny_st, folder)
    spec = {"scorer": {"type": "embedding", "model": str(folder)}}
    first = pipeline_fingerprint(spec, load(spec))
    for f in folder.rglob("*"):  # copied again later, as onto another replica
        os.utime(f, (f.stat().st_atime + 1000, f.stat().st_mtime + 1000))
    assert pipeline_fingerprint(spec, load(spec)) == first
    _flip_last_byte(next(folder.rglob("*.safetensors")))  # retrained in place
    assert pipeline_fingerprint(spec, load(spec)) != first


def _flip_last_byte(path):
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))


def test_llm_pipelines_are_told_apart_by_provider_model_and_format(monkeypatch):
    pytest.importorskip("openai", reason="the OpenAI client needs the 'openai' extra")
    from rerankit import load

    monkeypatch.setenv("K", "key")
    judge = {"type": "llm_pointwise", "provider": "openai", "base_url": "http://127.0.0.1:9"}
    judge |= {"api_key_env": "K", "cache": False}
    a = {"scorer": {**judge, "model": "m1"}}
    b = {"scorer": {**judge, "model": "m2"}}
    assert pipeline_fingerprint(a, load(a)) != pipeline_fingerprint(b, load(b))
    assert CACHE_FORMAT >= 1


def _identities(reranker):
    from rerankit.cache import scorer_identity

    return [scorer_identity(s) for s in reranker.scorers()]


def _fused(path: Path, bm25: float, jaccard: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'scorers = [{{ type = "bm25", weight = {bm25} }}, {{ type = "jaccard", weight = '
        f"{jaccard} }}]\n",
        encoding="utf-8",
    )
    return path


def test_a_pipeline_file_is_fingerprinted_by_its_contents_not_its_path(tmp_path):
    from rerankit import load

    def fingerprint(spec):
        return pipeline_fingerprint(spec, load(spec))

    file = _fused(tmp_path / "a" / "fused.toml", 0.5, 0.5)
    copy = _fused(tmp_path / "b" / "fused.toml", 0.5, 0.5)  # the same text elsewhere
    for spec_of in (lambda path: {"reranker": str(path)}, str):  # a stage naming it, or it
        first = fingerprint(spec_of(file))
        assert fingerprint(spec_of(copy)) == first
        _fused(file, 0.1, 0.9)  # its weights edited in place
        assert fingerprint(spec_of(file)) != first
        _fused(file, 0.5, 0.5)
    # a pipeline file naming another: the inner one's contents count too
    inner = _fused(tmp_path / "c" / "inner.toml", 0.5, 0.5)
    outer = tmp_path / "c" / "outer.toml"
    outer.write_text('[[stages]]\nreranker = "inner.toml"\nkeep = 2\n', encoding="utf-8")
    before = fingerprint(str(outer))
    _fused(inner, 0.2, 0.8)
    assert fingerprint(str(outer)) != before


def test_a_learned_model_file_and_its_report_are_part_of_the_fingerprint(tmp_path):
    from rerankit import load

    model, report = tmp_path / "ltr.lgb.txt", tmp_path / "ltr.lgb.json"
    model.write_text("tree version=v4\n(the first training)\n", encoding="utf-8")
    report.write_text(json.dumps({"embedding_model": "model-a"}), encoding="utf-8")
    pipeline = tmp_path / "learned.toml"
    pipeline.write_text('scorer = { type = "learned", model = "ltr.lgb.txt" }\n')

    def fingerprint():
        spec = str(pipeline)
        return pipeline_fingerprint(spec, load(spec))

    first = fingerprint()
    assert fingerprint() == first
    model.write_text("tree version=v4\n(trained again)\n", encoding="utf-8")  # re-tuned in place
    retrained = fingerprint()
    assert retrained != first
    report.write_text(json.dumps({"embedding_model": "model-b"}), encoding="utf-8")
    assert fingerprint() != retrained  # its features come from another embedding model


def test_an_embedding_models_vectors_are_keyed_by_its_files_not_its_path(tmp_path, tiny_st):
    import shutil

    from rerankit.scorers import EmbeddingScorer

    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(tiny_st, a)
    shutil.copytree(tiny_st, b)
    key = EmbeddingScorer(str(a)).model_key
    assert EmbeddingScorer(str(b)).model_key == key  # a copy on another replica: shared
    assert str(a) not in key
    # not only the weights: a tokenizer or pooling file changed in place changes the vectors
    pooling = next(a.rglob("config.json"))
    pooling.write_text(pooling.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert EmbeddingScorer(str(a)).model_key != key


def test_a_model_folders_digest_is_remembered_on_disk_until_its_files_change(tmp_path, monkeypatch):
    """A new process (each `rerankit rank`) does not read a large model's bytes again to key
    its cache: the digest is kept in the cache directory by the files' stats."""
    from rerankit.cache import fingerprint

    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "weights.bin").write_bytes(b"\x01" * 1000)
    first = fingerprint.model_files_digest(folder)
    monkeypatch.setattr(fingerprint, "_DIGESTS", {})  # a new process

    def no_reading(*args, **kwargs):
        raise AssertionError("read the model's bytes again")

    monkeypatch.setattr(fingerprint, "open", no_reading, raising=False)
    assert fingerprint.model_files_digest(folder) == first
    monkeypatch.undo()
    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path / "cache"))
    (folder / "weights.bin").write_bytes(b"\x02" * 1001)  # changed: computed again
    assert fingerprint.model_files_digest(folder) != first


@pytest.mark.parametrize(
    ("changed", "counts"),
    [
        ("model.safetensors", True),
        ("tokenizer.json", True),
        ("1_Pooling/config.json", True),
        ("checkpoints/checkpoint-10/model.safetensors", False),
        (".cache/huggingface/download.lock", False),
        ("notes/.draft", False),
    ],
)
def test_the_files_of_a_model_folder_are_one_list_for_every_key(
    tmp_path, monkeypatch, changed, counts
):
    """A model folder's content digest (answers, vectors) and its files' fingerprint (its
    ONNX export) read the same files: a change either sees, both see."""
    from rerankit._paths import model_files
    from rerankit.backends.local import folder_fingerprint
    from rerankit.cache import model_files_digest

    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "model"
    for name in ("config.json", "model.safetensors", "tokenizer.json", "1_Pooling/config.json"):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(name, encoding="utf-8")
    before = (model_files_digest(folder), folder_fingerprint(str(folder)))
    listed = model_files(folder)
    (folder / changed).parent.mkdir(parents=True, exist_ok=True)
    (folder / changed).write_text("changed in place", encoding="utf-8")
    after = (model_files_digest(folder), folder_fingerprint(str(folder)))
    assert (after[0] != before[0], after[1] != before[1]) == (counts, counts)
    assert (folder / changed in model_files(folder)) is counts
    assert [f for f in model_files(folder) if f != folder / changed] == [
        f for f in listed if f != folder / changed
    ]
    assert model_files(folder / "config.json") == [folder / "config.json"]  # a file: itself
