"""``rerankit check`` names the file a pipeline will run as the service's ``/info`` does: a
pipeline declared with ``quantize = "int8"`` runs ``onnx-int8`` (it said ``onnx``, hiding
which of the export's two files runs)."""

from __future__ import annotations

import pytest

from rerankit.cli.main import main


def test_the_ok_line_says_onnx_int8_for_the_int8_file(bert_dir, tmp_path, capsys):
    pytest.importorskip("onnx", reason="exporting needs the 'onnx' extra")
    from rerankit.backends.export import export

    out = export(
        str(bert_dir),
        tmp_path / "ce-onnx",
        kind="cross_encoder",
        quantize="int8",
        smooth_alpha=None,
        per_token=False,
    )
    table = f'reranker = {{ type = "cross_encoder", model = "{out}", backend = "onnx"'
    (tmp_path / "int8.toml").write_text(table + ', quantize = "int8" }\n')
    (tmp_path / "float32.toml").write_text(table + " }\n")
    assert main(["check", str(tmp_path / "int8.toml"), str(tmp_path / "float32.toml")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith(f"; runs {out} on onnx-int8"), lines
    assert lines[1].endswith(f"; runs {out} on onnx"), lines
