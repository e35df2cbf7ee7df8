"""How the ``ray`` engine meets Ray: starting or joining a cluster (a refused token said in
one line), what this process's environment hands the workers (the shared cache, and an
embedding cache file when every node is this machine), SIGTERM left to this process, Ray's
own log lines kept to what needs reading, and JSON Lines read with their line numbers."""

from __future__ import annotations

import functools
import logging
import os
import signal
import threading
from pathlib import Path
from typing import Any

from .._jsonl import json_lines
from .._optional import require
from ..cache import CACHE_URL_ENV, EMBEDDING_CACHE_ENV
from ..errors import RerankitError

__all__ = [
    "RAY_TOKEN_DOCS",
    "numbered_lines",
    "quiet_ray_logs",
    "start_ray",
    "worker_env",
]

logger = logging.getLogger(__name__)

#: Ray's page on token authentication ("Ray token authentication")
RAY_TOKEN_DOCS = "https://docs.ray.io/en/latest/ray-security/token-auth.html"

#: Ray Data loggers whose warnings on a healthy job are noise for a batch log: that the
#: progress bars this engine turns off are off, and that the actor pool waited for its
#: CPUs while its workers loaded their models (a job that truly lacks them is warned of by
#: :func:`check_resources` before it starts)
_NOISE = ("ray.data._internal.progress", "ray.data._internal.execution.resource_manager")


def quiet_ray_logs() -> None:
    """Keep Ray's and Ray Data's own loggers to warnings (they log every job's start, plan
    and end at INFO), and two of Ray Data's warnings that a healthy job prints (see
    ``_NOISE``) to errors; for command lines, which call it unless asked to be verbose."""
    require("ray.data", "the ray engine")  # imported first: it configures its loggers
    for name in ("ray", "ray.data"):
        logging.getLogger(name).setLevel(logging.WARNING)
    for name in _NOISE:
        logging.getLogger(name).setLevel(logging.ERROR)


def _refused_token(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) is Ray's token authentication refusing us."""
    seen = 0
    while exc is not None and seen < 5:
        text = f"{type(exc).__name__}: {exc}"
        if "InvalidAuthToken" in text or "AuthenticationError" in text:
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def start_ray(address: str | None, num_cpus: int | None = None) -> None:
    """``ray.init`` for a job (nothing when Ray is already up): a cluster at ``address``,
    else Ray on this machine. A cluster that refuses this process's token is one clear
    error. Ray's own SIGTERM handler (which prints a native stack and exits) is taken back:
    this process's SIGTERM handler stays in charge."""
    ray = require("ray", "the ray engine")
    if ray.is_initialized():
        return
    kwargs: dict[str, Any] = {
        "include_dashboard": False,
        "log_to_driver": False,
        "logging_level": logging.WARNING,
    }
    if address:
        kwargs["address"] = address
    elif num_cpus:
        kwargs["num_cpus"] = num_cpus
    main = threading.current_thread() is threading.main_thread()
    term = signal.getsignal(signal.SIGTERM) if main else None
    try:
        ray.init(**kwargs)
    except Exception as exc:
        if address and _refused_token(exc):
            mode = os.environ.get("RAY_AUTH_MODE") or "unset"
            raise RerankitError(
                f"the Ray cluster at {address} uses token authentication and refused this "
                f"process (RAY_AUTH_MODE is {mode}): export RAY_AUTH_MODE=token, with the "
                "cluster's token in ~/.ray/auth_token, $RAY_AUTH_TOKEN_PATH or "
                f"$RAY_AUTH_TOKEN (Ray's 'Token authentication': {RAY_TOKEN_DOCS})"
            ) from None
        raise
    finally:
        if main and term is not None:
            signal.signal(signal.SIGTERM, term)
    logger.info("ray started (%s)", address or "local")


def _one_machine(ray: Any) -> bool:
    """Whether every live node of the cluster is this machine."""
    here = ray.util.get_node_ip_address()
    return all(n.get("NodeManagerAddress") == here for n in ray.nodes() if n.get("Alive"))


def worker_env() -> dict[str, str]:
    """The environment variables of this process the workers get: ``$RERANKIT_CACHE_URL``
    (a server every node reaches), and ``$RERANKIT_EMBEDDING_CACHE``: "" (keep none) as
    is; a file (its absolute path) only when every node of the cluster is this machine,
    where its processes share it safely (SQLite in WAL mode, writers waiting their turn);
    on a cluster of several machines a file is not handed on, and a warning says so."""
    ray = require("ray", "the ray engine")
    env = {}
    shared = os.environ.get(CACHE_URL_ENV)
    if shared:
        env[CACHE_URL_ENV] = shared
    file = os.environ.get(EMBEDDING_CACHE_ENV)
    if file == "":
        env[EMBEDDING_CACHE_ENV] = ""
    elif file:
        if _one_machine(ray):
            env[EMBEDDING_CACHE_ENV] = str(Path(file).absolute())
        else:
            logger.warning(
                "--embedding-cache (%s=%s) is a file on this machine; the Ray workers on "
                "other machines do not read it%s: set %s to a Redis/Valkey server every "
                "node reaches (see scale-out.md)",
                EMBEDDING_CACHE_ENV,
                file,
                " (they use the shared cache it names)" if shared else " and keep none",
                CACHE_URL_ENV,
            )
            env[EMBEDDING_CACHE_ENV] = ""  # not a file of the same name on another node
    return env


def check_resources(workers: int, cpus: float, gpus: float) -> None:
    """Warn when the cluster has fewer CPUs or GPUs than ``workers`` actors ask for: the
    job then waits for a node that may never come (Ray Data's own warning of it is
    quieted, as a healthy job prints it too while its workers load their models)."""
    ray = require("ray", "the ray engine")
    have = ray.cluster_resources()
    for name, each in (("CPU", cpus), ("GPU", gpus)):
        if each and workers * each > have.get(name, 0):
            logger.warning(
                "%d workers ask for %g %ss each, and the Ray cluster has %g: the job waits "
                "until the cluster grows (lower --workers, --num-cpus or --num-gpus)",
                workers,
                each,
                name,
                have.get(name, 0),
            )


@functools.cache
def _lines_class() -> type:
    """A Ray Data file source of JSON Lines with their line numbers (Ray's ``read_text``
    has none), ``rows`` lines a block, so that rows reach the workers, and their results
    this process, a block of ``--batch-size`` at a time rather than a file at once."""
    based = require("ray.data.datasource", "the ray engine").FileBasedDatasource
    pa = require("pyarrow", "the ray engine")

    class NumberedLines(based):  # type: ignore[misc, valid-type]
        def __init__(self, paths: Any, rows: int) -> None:
            super().__init__(paths)
            self.rows = rows

        def _read_stream(self, f: Any, path: str) -> Any:
            text = f.readall().decode("utf-8-sig")
            lines, numbers = [], []
            for number, line in enumerate(json_lines(text), start=1):
                if line.strip():
                    lines.append(line)
                    numbers.append(number)
                if len(lines) >= self.rows:
                    yield pa.table({"text": lines, "line": numbers})
                    lines, numbers = [], []
            if lines:
                yield pa.table({"text": lines, "line": numbers})

    return NumberedLines


def numbered_lines(path: str, rows: int) -> Any:
    """A Ray Dataset of the lines of a JSON Lines file (``text``, and ``line``, its
    number), ``rows`` a block; read by tasks that ask for no CPU (the actors hold them)."""
    ray_data = require("ray.data", "the ray engine")
    return ray_data.read_datasource(_lines_class()(path, rows), num_cpus=0)
