"""`rerankit --help`, `rerankit COMMAND --help` and `rerankit --version` answer at once:
building the parser imports none of the library's heavy parts (numpy, the scorers, the
readers, training, the service, the model runtimes); each command's code loads when it runs.
The values the parsers show from those parts are copies (:mod:`rerankit.cli.parsers.shown`),
each checked here against the library's own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

#: what parsing must not import
HEAVY = (
    "numpy",
    "rerankit.scorers",
    "rerankit.batch",
    "rerankit.training",
    "rerankit.server",
    "rerankit.eval",
    "rerankit.cache",
    "rerankit.api",
    "torch",
    "onnxruntime",
)

#: in a fresh process: the parser built, and `--help` parsed for the root and for every
#: command and subcommand (argparse prints it and exits), then the heavy modules loaded
PARSE_EVERY_HELP = """
import argparse, contextlib, io, json, sys
from rerankit.cli.main import build_parser

def commands(parser, prefix=()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*prefix, name)
                yield from commands(sub, (*prefix, name))

parser = build_parser()
helped = []
for argv in [(), *commands(parser)]:
    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.suppress(SystemExit):
        build_parser().parse_args([*argv, "--help"])
    helped.append([" ".join(argv), out.getvalue().startswith("usage: rerankit")])
heavy = json.loads(sys.argv[1])
loaded = sorted(m for m in heavy if m in sys.modules)
print(json.dumps({"helped": helped, "loaded": loaded}))
"""


def _fresh(*args: str) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin", "COLUMNS": "100"}
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_every_commands_help_loads_none_of_the_library_heavy_parts():
    done = _fresh("-c", PARSE_EVERY_HELP, json.dumps(HEAVY))
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    helped = dict(found["helped"])
    assert {"", "rank", "batch", "eval", "serve", "cache", "cache clear", "train"} <= set(helped)
    assert all(helped.values()), helped  # each printed its help
    assert found["loaded"] == []


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_version_and_help_load_none_of_it_either(flag):
    probe = (
        "import json, runpy, sys\n"
        f"sys.argv = ['rerankit', {flag!r}]\n"
        "try:\n"
        "    runpy.run_module('rerankit', run_name='__main__')\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        f"print(json.dumps([code, sorted(m for m in {HEAVY!r} if m in sys.modules)]))\n"
    )
    done = _fresh("-c", probe)
    assert done.returncode == 0, done.stderr
    code, loaded = json.loads(done.stdout.splitlines()[-1])
    assert code in (0, None) and loaded == []
    assert "rerankit" in done.stdout.splitlines()[0]


def test_a_command_still_runs_its_code():
    """The command's code loads when it runs: `rerankit rank` ranks as before."""
    ranked = subprocess.run(
        [sys.executable, "-m", "rerankit", "rank", "-q", "solar power", "-r", "bm25"],
        input='["wind farms", "solar power on roofs"]',
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert ranked.returncode == 0, ranked.stderr
    assert json.loads(ranked.stdout.splitlines()[0])["text"] == "solar power on roofs"


def test_the_values_the_help_shows_are_the_library_s():
    from rerankit.cache.manage import CACHE_NAMES
    from rerankit.cli.parsers import shown
    from rerankit.eval.evaluation import DEFAULT_RERANKERS
    from rerankit.rerankers.precompute import DEFAULT_BATCH_SIZE
    from rerankit.server.logs import LOG_FORMATS
    from rerankit.training.clicks.interleave import BY, METHODS
    from rerankit.training.clicks.log import STORE
    from rerankit.training.clicks.simulate_data import SHOWN
    from rerankit.training.fine_tuning import MAX_HELD_OUT

    assert shown.CACHE_NAMES == CACHE_NAMES
    assert shown.DEFAULT_RERANKERS == DEFAULT_RERANKERS
    assert shown.DEFAULT_BATCH_SIZE == DEFAULT_BATCH_SIZE
    assert shown.LOG_FORMATS == LOG_FORMATS
    assert shown.MAX_HELD_OUT == MAX_HELD_OUT
    assert shown.INTERLEAVING_BY == BY
    assert shown.INTERLEAVING_METHODS == METHODS
    assert shown.CLICK_LOG_STORES == STORE
    assert shown.SIMULATED_SHOWN == SHOWN


def test_a_flag_checked_in_the_library_s_words_still_is(capsys):
    """The checks that load a library part do so when the flag is given (a singular cache
    name taken, an unknown language refused as the library says)."""
    from rerankit.cli import build_parser, main

    args = build_parser().parse_args(["cache", "info", "embedding"])
    assert args.what == "embeddings"
    args = build_parser().parse_args(["interleave-report", "log.jsonl", "--method", "team_draft"])
    assert args.method == "team-draft"
    with pytest.raises(SystemExit) as stopped:
        main(["rank", "-q", "x", "--language", "xx"])
    assert stopped.value.code == 2
    assert "argument --language: unknown language 'xx'" in capsys.readouterr().err
