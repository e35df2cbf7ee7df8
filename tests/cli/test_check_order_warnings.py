"""``rerankit check`` prints what building a pipeline warns of its stages' order (mmr after
a cap, a judge after a pin) without ``-v``: it printed ``ok`` and the warning only reached
the log."""

from __future__ import annotations

from rerankit.cli.main import main

MMR_AFTER = (
    '[[stages]]\nscorer = { type = "bm25" }\n\n'
    '[[stages]]\nname = "cap"\nrule = { type = "difficulty" }\n\n'
    '[[stages]]\nrule = { type = "mmr", lambda = 0.7 }\n'
)
PIN_BEFORE = (
    '[[stages]]\nscorer = { type = "bm25" }\n\n'
    '[[stages]]\nrule = { type = "pin", pin = { "q" = ["a"] } }\nkeep = 8\n\n'
    '[[stages]]\nname = "judge"\nscorer = { type = "jaccard" }\n'
)


def test_check_prints_the_order_warnings_of_a_pipeline_file(tmp_path, capsys):
    mmr, pin = tmp_path / "mmr_after.toml", tmp_path / "pin_before.toml"
    mmr.write_text(MMR_AFTER)
    pin.write_text(PIN_BEFORE)
    assert main(["check", str(mmr), str(pin)]) == 0  # warned, not failed
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == (
        f"{mmr}: warning: rule stage 'mmr' orders by the scores, which rule stage 'cap' left "
        "as they were, so its order is lost; put 'mmr' before 'cap' (e.g. deduplicate, mmr, "
        "then a cap)"
    )
    assert lines[3].startswith(
        f"{pin}: warning: rule stage 'pin' sets an order that scoring stage 'judge' after it "
        "replaces with its own"
    )


def test_check_prints_them_for_a_settings_file_s_pipelines_too(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "mmr_after.toml").write_text(MMR_AFTER)
    settings = tmp_path / "service.toml"
    settings.write_text('[pipelines.diverse]\nreranker = "mmr_after.toml"\n')
    main(["check", str(settings)])
    out = capsys.readouterr().out
    assert f"{settings}: warning: pipeline 'diverse': rule stage 'mmr' orders by the scores" in out
