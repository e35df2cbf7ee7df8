"""A winner named from few sessions with a click credited says so (``interleave-report``
declared one from 13 of 66 sessions, with no caveat)."""

from __future__ import annotations

from rerankit.cli.main import main
from rerankit.training.clicks import ClickLog, interleaving_report
from rerankit.training.clicks.interleave import MIN_CLICKED, InterleavingReport
from rerankit.training.clicks.reader import read_log


def _one_sided_log(path, sessions: int) -> None:
    """Team-draft sessions where every click lands on pipeline a's first pick; every other
    session has no click."""
    log = ClickLog(path, store="id")
    for s in range(sessions):
        log.log_impression(
            f"s{s}",
            f"q{s % 5}",
            [{"id": str(i)} for i in range(4)],
            [0, 1, 2, 3],
            interleaving={"pipelines": ["a", "b"], "teams": [0, 1, 0, 1]},
        )
        if s % 2 == 0:
            log.log_feedback(f"s{s}", ["0"])
        else:
            log.log_feedback(f"s{s}", [])
    log.close()


def test_a_winner_from_few_clicked_sessions_is_called_tentative(tmp_path, capsys):
    path = tmp_path / "i.jsonl"
    _one_sided_log(path, 40)  # 20 with a click, all for a
    report = interleaving_report(read_log(path)[0])
    assert report.winner == "a" and report.clicked == 20 < MIN_CLICKED
    assert report.few_clicked and report.as_dict()["few_clicked"] is True
    said = "a wins, but from only 20 sessions with a click credited (under 30, too few"
    assert said in report.describe()
    assert main(["interleave-report", str(path)]) == 0
    printed = capsys.readouterr().out
    assert said in printed and "winner: a (tentative: 20 clicked sessions)" in printed


def test_a_winner_from_enough_clicked_sessions_carries_no_caveat():
    figures = {"pipelines": ("a", "b"), "wins": (40, 10), "ties": 10, "delta": 0.3}
    figures |= {"interval": (0.1, 0.5), "p_value": 0.001, "queries": 20, "confidence": 0.95}
    report = InterleavingReport(sessions=60, clicked=MIN_CLICKED + 20, **figures)
    assert report.winner == "a" and not report.few_clicked
    assert "too few" not in report.describe()
    few = InterleavingReport(sessions=60, clicked=MIN_CLICKED - 1, **figures)
    assert few.few_clicked and "too few for the interval to hold" in few.describe()
