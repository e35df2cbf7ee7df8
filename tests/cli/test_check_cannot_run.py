"""Set-ups that build but cannot run are found by ``rerankit check`` (a mistake, exit 1)
and refused when the model loads, naming the model and why: a cross-encoder of three or
more labels (it failed on every call, or gave ``rerank()`` all-zero scores with a warning)
and ``device = "cuda"`` on a PyTorch without CUDA (a raw AssertionError at load)."""

from __future__ import annotations

import json

import pytest

from rerankit.cli import main
from rerankit.errors import ModelLoadError


def _three_labels(folder):
    """A cross-encoder folder whose config.json names three labels (check reads no weights)."""
    folder.mkdir()
    labels = {"0": "entailment", "1": "neutral", "2": "contradiction"}
    config = {"architectures": ["BertForSequenceClassification"], "id2label": labels}
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "model.safetensors").write_bytes(b"")
    (folder / "vocab.txt").write_text("[PAD]\n")
    return folder


def test_check_says_a_three_label_model_is_no_relevance_model(tmp_path, capsys):
    pytest.importorskip("sentence_transformers", reason="the cross-encoder needs the 'torch' extra")
    model = _three_labels(tmp_path / "nli")
    spec = tmp_path / "three.toml"
    spec.write_text(f'name = "t"\n[scorer]\ntype = "cross_encoder"\nmodel = "{model}"\n')
    assert main(["check", str(spec)]) == 1
    out = capsys.readouterr().out
    assert f"{spec}: pipeline 't': cross-encoder {str(model)!r} has 3 labels" in out
    assert ": ok:" not in out


def test_rerank_raises_for_a_three_label_model_instead_of_scoring_zeros(bert3_dir):
    pytest.importorskip("sentence_transformers", reason="the cross-encoder needs the 'torch' extra")
    import rerankit
    from rerankit.scorers import CrossEncoderScorer

    with pytest.raises(ModelLoadError, match=r"cross-encoder '.*' has 3 labels") as info:
        rerankit.rerank(
            "vaccines",
            ["a virus", "vaccines work"],
            reranker=CrossEncoderScorer(str(bert3_dir), device="cpu"),
        )
    assert str(bert3_dir) in str(info.value)


def _cpu_build():
    torch = pytest.importorskip("torch", reason="needs the 'torch' extra")
    if torch.version.cuda is not None or getattr(torch.version, "hip", None) is not None:
        pytest.skip("this PyTorch has CUDA: the case is a CPU build's")


def test_cuda_on_a_cpu_build_of_pytorch_is_said_by_check_and_at_load(bert_dir, tmp_path, capsys):
    _cpu_build()
    pytest.importorskip("sentence_transformers", reason="the cross-encoder needs the 'torch' extra")
    from rerankit.scorers import CrossEncoderScorer

    said = "device 'cuda' asked for but this PyTorch ("
    fix = 'has no CUDA (a CPU build); set device = "cpu" or install a CUDA build'
    spec = tmp_path / "cuda.toml"
    spec.write_text(
        f'name = "x"\n[scorer]\ntype = "cross_encoder"\nmodel = "{bert_dir}"\ndevice = "cuda"\n'
    )
    assert main(["check", str(spec)]) == 1
    out = capsys.readouterr().out
    assert f"{spec}: pipeline 'x': cross-encoder {str(bert_dir)!r}: {said}" in out and fix in out
    with pytest.raises(ModelLoadError) as info:
        CrossEncoderScorer(str(bert_dir), device="cuda").score_texts("q", ["a virus"])
    message = str(info.value)
    assert message.startswith(f"could not load cross-encoder {str(bert_dir)!r}: {said}")
    assert fix in message and "AssertionError" not in message


@pytest.mark.parametrize(("gpus", "sees"), [(1, "sees 1 CUDA GPU;"), (2, "sees 2 CUDA GPUs;")])
def test_a_gpu_past_those_pytorch_sees_is_said_with_their_number(monkeypatch, gpus, sees):
    """``cuda:N`` past the GPUs a CUDA build sees (the GPUs counted as PyTorch has them)."""
    torch = pytest.importorskip("torch", reason="needs the 'torch' extra")
    from rerankit.backends.hardware import device_problem

    monkeypatch.setattr(torch.version, "cuda", "12.1")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: gpus)
    assert device_problem(f"cuda:{gpus - 1}") is None
    said = device_problem(f"cuda:{gpus}")
    assert (
        said == f'device \'cuda:{gpus}\' asked for but PyTorch {sees} set device = "cpu" or "auto"'
    )
