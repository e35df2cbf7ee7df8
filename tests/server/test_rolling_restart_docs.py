"""The rolling restart of docs/service.md ("Change the settings: a rolling restart") as an
operator copies it: its loop ran `systemctl restart rerankit@$port` with no such unit on
the page, and waited on plain `/ready`, which with `ready_when = "any"` is 200 while the
default pipeline still loads (a replica taken for restarted while it answered 503s). The
unit it now shows starts `rerankit serve` as the parser reads it, gives a stop more time
than `shutdown_delay` + `graceful_timeout`, and the loop waits on the default pipeline."""

from __future__ import annotations

import re
import shlex
import socket
from pathlib import Path

import pytest

from rerankit.cli import build_parser
from rerankit.cli.serve import check_port_free
from rerankit.errors import InputError
from rerankit.server import ServerSettings

PAGE = (Path(__file__).resolve().parents[2] / "docs" / "service.md").read_text(encoding="utf-8")
SECTION = PAGE.split("### Change the settings: a rolling restart\n", 1)[1].split("\n### ", 1)[0]


def _unit() -> dict[str, str]:
    (block,) = re.findall(r"```ini\n(.*?)```", SECTION, flags=re.S)
    lines = [line.strip() for line in block.splitlines()]
    pairs = [line.split("=", 1) for line in lines if "=" in line and not line.startswith("#")]
    return {key: value for key, value in pairs}


def test_the_unit_starts_serve_as_the_parser_reads_it():
    unit = _unit()
    words = shlex.split(unit["ExecStart"].replace("%i", "8081"))
    assert Path(words[0]).name == "rerankit"
    args = build_parser().parse_args(words[1:])
    assert args.port == 8081 and args.settings == "/etc/rerankit/service.toml"
    assert unit["UMask"] == "0077"  # "Secure it": files only the service's user reads


def test_the_unit_waits_for_a_stop_longer_than_the_service_takes():
    defaults = ServerSettings()
    stop = float(_unit()["TimeoutStopSec"])
    assert stop > defaults.shutdown_delay + defaults.graceful_timeout  # then SIGKILL


def test_the_loop_waits_for_the_default_pipeline_not_any():
    (loop,) = [b for b in re.findall(r"```bash\n(.*?)```", SECTION, flags=re.S) if "for port" in b]
    assert "systemctl restart rerankit@$port" in loop
    waits = re.search(r"until curl -sf \"?(\S+?)\"? ", loop)
    assert waits is not None and waits.group(1).endswith("/ready?model=hybrid"), loop


def test_a_restart_within_the_delay_is_refused_as_the_page_says():
    """The page did not say what a replica started while the old one drains does: it cannot
    listen (the old one still does) and exits 1 with this message, before any model."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        with pytest.raises(InputError) as refused:
            check_port_free("127.0.0.1", port)
    said = f"rerankit serve: error: {refused.value}".replace(f"127.0.0.1:{port}", "0.0.0.0:8081")
    assert said in SECTION, said
    assert "exits 1 at once, before loading anything" in SECTION
