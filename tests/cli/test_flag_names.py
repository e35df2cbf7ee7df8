"""A message the library builds names an option by its Python keyword for a Python caller
(``unjudged='negative' (--unjudged)``) and by its flag, leading, for a user of the command
line (``--unjudged negative``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rerankit.cli import main
from rerankit.errors import flags_first, keyword_flag
from rerankit.text import check_language


def test_a_python_caller_reads_the_keyword_first():
    assert keyword_flag("unjudged", "negative") == "unjudged='negative' (--unjudged)"
    assert keyword_flag("prices") == "prices= (--prices)"
    assert keyword_flag("split", "dev", flag="--train-split") == "split='dev' (--train-split)"


def test_the_command_line_reads_the_flag_first_with_the_value_as_typed():
    with flags_first():
        assert keyword_flag("unjudged", "negative") == "--unjudged negative"
        assert keyword_flag("prices") == "--prices"
        assert keyword_flag("first_stage_field") == "--first-stage-field"
        assert keyword_flag("keep_learned", True) == "--keep-learned"
        assert keyword_flag("split", "dev", flag="--train-split") == "--train-split dev"
        assert keyword_flag("out", Path("my runs/t.toml")) == "--out 'my runs/t.toml'"
        assert keyword_flag("strategies", ("bm25", "embedding")) == "--strategies bm25,embedding"
    assert keyword_flag("folds", 2) == "folds=2 (--folds)"  # put back after


def test_an_unknown_language_on_the_command_line_points_at_the_page_not_python(capsys):
    with pytest.raises(SystemExit):
        main(["rank", "-q", "q", "--language", "english"])
    err = capsys.readouterr().err
    assert "unknown language 'english'" in err and "docs/documents.md, Languages" in err
    assert "rerankit.text.LANGUAGES" not in err
    with pytest.raises(ValueError, match=r"rerankit\.text\.LANGUAGES lists them"):
        check_language("english")  # a Python caller is still pointed at the tuple


def test_a_library_message_reaching_the_command_line_leads_with_the_flag(tmp_path, capsys):
    """tune's options are checked by the library (TuneOptions): its words, the flag first."""
    assert main(["tune", "--data", str(tmp_path), "--folds", "2", "--out", "t.toml"]) == 1
    err = capsys.readouterr().err
    assert "--folds 2: must be at least 3" in err and "folds=2" not in err
    assert keyword_flag("folds", 2) == "folds=2 (--folds)"  # main() put the switch back
