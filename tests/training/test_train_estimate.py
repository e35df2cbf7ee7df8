"""``train``'s time estimate counts what the trainer does besides its steps: the
checkpoints it writes (on a GPU a tiny run's steps take milliseconds and the checkpoints
most of its time), and says it is rough where starting up weighs (a run of few steps)."""

from __future__ import annotations

import re

import pytest

torch = pytest.importorskip("torch", reason="training needs the 'torch' extra")

from rerankit.training.trainer import ROUGH_BELOW, TrainingRun, saves  # noqa: E402


def said(tmp_path, pairs: int, batch_size: int) -> str:
    model = torch.nn.Linear(512, 512)  # 1 MB of weights
    rows = [{"x": i} for i in range(pairs)]
    heard: list[str] = []
    run = TrainingRun.of(rows, tmp_path / "out", batch_size=batch_size, log=heard.append)

    def loss_of(probe):
        return model(torch.ones(len(probe), 512)).sum()

    run.estimate(loss_of, model)
    assert len(heard) == 1
    return heard[0]


def test_the_checkpoints_a_short_run_writes_are_counted_and_it_is_said_rough(tmp_path):
    line = said(tmp_path, pairs=20, batch_size=4)  # 5 steps: a checkpoint after each
    assert re.fullmatch(
        r"20 training pairs, 5 steps of 4: about \d+ s on this machine, \d+ s of it "
        r"writing 5 checkpoints of 3 MB \(rough: in a run of under 20 steps, starting the "
        r"trainer, not counted, weighs too\)",
        line,
    ), line
    assert not list((tmp_path / "out" / "checkpoints").iterdir())  # the probe is removed


def test_a_longer_run_is_not_said_rough_and_writes_about_five_checkpoints(tmp_path):
    line = said(tmp_path, pairs=4 * 42, batch_size=4)  # 42 steps: every 8, and the last
    assert "42 steps of 4" in line and "writing 6 checkpoints of 3 MB" in line
    assert "rough" not in line
    assert ROUGH_BELOW <= 42


@pytest.mark.parametrize(("steps", "written"), [(1, 1), (5, 5), (7, 7), (10, 5), (42, 6)])
def test_saves_counts_the_trainers_checkpoints(steps, written):
    assert saves(steps) == written
