"""Service settings: pipelines by name, keys, limits. Read from a TOML/YAML/JSON file::

[server]
api_keys = ["secret"]          # plus those in $RERANKIT_API_KEYS="k1,k2"; none: open
api_key_env = "MY_KEYS"        # the variable read for keys (default RERANKIT_API_KEYS, which
                               # may be unset); a variable named here must hold a key
default = "hybrid"
plugins = ["acme_rerank"]      # modules registering your scorers/rules/rerankers (rerankit.plugins)
max_documents = 1000           # per request
max_document_chars = 20000     # longer documents are truncated (or rejected: truncate=false)
truncate = true
max_body_bytes = 5000000       # larger bodies get 413
deadline = 30.0                # seconds per request (then 503 if not run, 504 if running)
max_concurrency = 4            # requests admitted at once (local models take turns on one thread)
max_queue = 64                 # requests waiting beyond that; more get 429 + Retry-After
max_concurrency_per_pipeline = 0  # slots one pipeline may hold (and its share of the queue);
                               # 0: all with one pipeline, else max_concurrency less a quarter
metrics_public = true          # false: /metrics needs a key too
answer_cache = false           # true: identical requests answered from the answer cache (in
                               # [cache] url's Redis, else answers.sqlite) and computed once
batching = true                # micro-batch embedding work across concurrent requests
batch_max_items = 256
batch_max_tokens = 16384        # tokens per embedding batch (0: no token budget)
batch_max_wait_ms = 5.0
batch_pairs = "off"            # cross-encoder pairs of concurrent requests scored together:
                               # "on", "auto" (models on a GPU) or "off" (needs batching = true)
batch_max_pairs = 1024         # pairs per cross-encoder batch (a request's are never split)
shutdown_delay = 5.0           # seconds after SIGTERM that /ready says "stopping" while requests
                               # are still served (a balancer stops routing here), then:
graceful_timeout = 30.0         # seconds requests in flight may take to finish on shutdown
body_timeout = 15.0            # seconds to receive a request body (then 408)
header_timeout = 10.0          # seconds to receive a request's headers (then the connection closes)
keep_alive_seconds = 5.0       # idle keep-alive connections close after this
max_connections = 1000         # connections served at once; requests beyond get 503
max_header_bytes = 16384       # larger request headers are refused
ready_when = "all"             # /ready is 200 when "all" pipelines warmed up, or "any" one
stuck_grace = 2.0              # seconds past its deadline that stuck work may hold its slot
retry_max_seconds = 300.0      # a pipeline that failed to load is retried with backoff up to this
failing_probe_seconds = 5.0    # a failing pipeline answers 503 at once but for one request let
                               # through this often to try it (0: it runs every request)
backend = "auto"               # where `embedding` and `hybrid` run, wherever named: "auto" (ONNX
                               # Runtime for the bundled model where installed), "torch", "onnx"
quantize = ""                  # "int8" for int8 weights on ONNX Runtime
model = ""                     # the embedding model of `embedding` and `hybrid`, wherever named:
                               # a hub id, a model folder or a folder written by rerankit export
interleave = ["hybrid", "cascade"]  # answer a share of `hybrid`'s requests with an
interleave_share = 0.1         # interleaving of both (needs [server.feedback]; see .experiments)
interleave_method = "optimized"  # or "team-draft" (optimized needs less traffic to tell)
explore = 0.0                  # share of requests with adjacent results below the top 3 swapped,
explore_pairs = 0.1            # each pair with this probability (RandPair; needs feedback)

[server.feedback]              # log impressions, take POST /v1/feedback (see .feedback)
path = "clicks.jsonl"          # (or [server] feedback = "clicks.jsonl" for the defaults)
store = "hash"                 # of each document: "text", its SHA-256 ("hash") or "id" only
max_bytes = 100000000          # rotate past this size, keeping `backups` older files
backups = 5

[server.aliases]               # other names for pipelines, added to Cohere's public rerank model
"my-app" = "cascade"           # names (the default pipeline's) and "hybrid" (a pipeline that is
                               # the hybrid under another name); aliases = {}: none of them

[pipelines.hybrid]
reranker = "hybrid"

[pipelines.cascade]            # any declared pipeline (see rerankit.config)
stages = [{ scorer = { type = "bm25" }, keep = 30 }, { reranker = "hybrid" }]

[cache]                        # where the caches live (see rerankit.cache.CacheSettings)
url = "redis://127.0.0.1:6379/0"   # a Redis/Valkey server shared by replicas; "" (default):
                                   # $RERANKIT_CACHE_URL, else SQLite files on this machine;
                                   # ${NAME} in it: the environment variable (unset: an error)
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ..backends.manifest import check_backend
from ..cache import CacheSettings
from ..cache.store import redacted
from ..config import read_spec
from ..options import check_options, unknown_keys
from ..plugins import load_environment, load_plugins, plugin_list, plugins_beside
from ..spec_toml import PIPELINE_SUFFIXES, paths_beside, read_pipeline
from .api_keys import env_keys, env_problem, kind_of, list_problem
from .batching import PAIR_MODES
from .deadline_setting import deadline_argument, server_table
from .feedback import (
    UNSET_NOTED,
    FeedbackSettings,
    check_experiments,
    expand_variables,
    feedback_beside,
)
from .hybrid_alias import hybrid_stand_in
from .model_names import COHERE_MODELS, not_found

__all__ = ["API_KEY_ENV", "ServerSettings", "key_variable_problem", "settings_beside"]

DEFAULT_PIPELINES = ("bm25", "embedding", "hybrid")
API_KEY_ENV = "RERANKIT_API_KEYS"
#: scorer types that serve as a pipeline of their own, given a model (``--reranker``)
MODEL_SCORERS = ("embedding", "cross_encoder", "causal_lm")


def flag_pipeline(
    reranker: str,
    model: str | None = None,
    backend: str | None = None,
    quantize: str | None = None,
    language: str | None = None,
) -> Any:
    """The pipeline spec ``rerankit serve --reranker NAME --model M --backend B --quantize Q``
    means: a registered reranker (``hybrid``: ``model`` is its embedding model) or one of the
    model scorers (``embedding``, ``cross_encoder``, ``causal_lm``) with these options."""
    pairs = (("model", model), ("backend", backend), ("quantize", quantize), ("language", language))
    options = {key: value for key, value in pairs if value}
    kind = reranker.replace("-", "_")
    if kind in MODEL_SCORERS:
        return {"scorer": {"type": kind, **options}}
    return {"reranker": {"type": reranker, **options}} if options else reranker


def on_backend(
    spec: Any, backend: str = "auto", quantize: str | None = None, model: str | None = None
) -> Any:
    """``spec`` with the built-in ``embedding`` and ``hybrid``, wherever a pipeline names
    them (``"hybrid"``, ``{reranker = "hybrid"}``, or a stage ``{reranker = "hybrid", keep =
    ...}``), moved to ``backend`` and, given ``model``, reading that embedding model (a hub
    id, a model folder or a folder written by ``rerankit export``), a pipeline file's too
    (read in). Anything declared with options of its own is left as it is (set these there)."""
    if backend == "auto" and quantize is None and not model:
        return spec
    options = {
        **({"model": model} if model else {}),
        "backend": backend,
        **({"quantize": quantize} if quantize else {}),
    }
    built = ("hybrid", "embedding")

    def stage(entry: Any) -> Any:
        if not isinstance(entry, Mapping) or entry.get("reranker") not in built:
            alone = isinstance(entry, Mapping) and list(entry) == ["reranker"]
            return (in_file(entry["reranker"]) or entry) if alone else entry
        rest = {k: v for k, v in entry.items() if k != "reranker"}
        if entry["reranker"] == "hybrid":
            return {**rest, "reranker": {"type": "hybrid", **options}}
        return {**rest, "scorer": {"type": "embedding", **options}}

    def in_file(path: Any) -> Any:  # a pipeline file's spec moved as ``serve --reranker
        if not isinstance(path, str) or Path(path).suffix.lower() not in PIPELINE_SUFFIXES:
            return None  # FILE --model M`` moves it; None if nothing in it moves
        try:
            declared = read_pipeline(path)
        except (OSError, ValueError):  # said when the pipeline is built
            return None
        moved = on_backend(declared, backend, quantize, model)
        return None if moved == declared else moved

    if isinstance(spec, str):
        return stage({"reranker": spec}) if spec in built else in_file(spec) or spec
    if isinstance(spec, Mapping) and isinstance(spec.get("stages"), list):
        return {**spec, "stages": [stage(entry) for entry in spec["stages"]]}
    return stage(spec)


def key_variable_problem(variable: str, named: bool, others: bool = False) -> str | None:
    """Why the API keys cannot be read from ``$variable``, or None: a variable ``named``
    (``--api-key-env``, ``api_key_env``) must hold a key, as must ``RERANKIT_API_KEYS`` when
    set at all (empty: a secret that failed to arrive); unset and not named, the service is
    open unless ``api_keys`` (``others``) gives keys. Under ``rerankit check`` (CI has no
    secrets) the variable is noted in :data:`.feedback.UNSET_NOTED` instead."""
    value = os.environ.get(variable)
    if env_keys(value):
        return env_problem(value, variable)
    if value is None and not named:
        return None
    if (noted := UNSET_NOTED.get()) is not None:  # a warning of ``rerankit check``
        noted.append(("api_key_env" if named else "api_keys", variable))
        return None
    state = "is not set" if value is None else "is set but holds no keys"
    why = "its keys would be missing" if others else "the service would be open"
    return (
        f"${variable} {state} ({why}); set it to one key or several, comma-separated (to "
        f"run open on purpose, name no variable and leave {API_KEY_ENV} unset)"
    )


def settings_beside(spec: Mapping[str, Any], folder: Path) -> dict[str, Any]:
    """``spec`` with relative paths taken from ``folder`` (the file's): a pipeline file or
    ``model`` folder and ``[server] model`` where they exist there, the click log's path
    always (written, not read). ``$NAME`` and ``${NAME}`` in ``[cache] url`` are environment
    variables' values (a password kept out of the file); an unset one is a ValueError."""
    spec = dict(spec)
    cache = spec.get("cache")
    if isinstance(cache, Mapping) and isinstance(cache.get("url"), str):
        url = cache["url"]
        spec["cache"] = {**cache, "url": expand_variables(url, "[cache] url", redacted(url))}
    if isinstance(spec.get("pipelines"), Mapping):
        spec["pipelines"] = {  # the `[pipelines]` line form names a pipeline's reranker
            name: paths_beside({"reranker": value}, folder)["reranker"]
            if isinstance(value, str)
            else paths_beside(value, folder)
            for name, value in spec["pipelines"].items()
        }
    server = spec.get("server")
    if isinstance(server, Mapping):
        server = dict(server)
        if server.get("feedback"):
            server["feedback"] = feedback_beside(server["feedback"], folder)
        if isinstance(server.get("model"), str):
            server["model"] = paths_beside({"model": server["model"]}, folder)["model"]
        spec["server"] = plugins_beside(server, folder)  # a plugins .py file beside it
    return spec


def default_pipelines(
    backend: str = "auto", quantize: str | None = None, model: str | None = None
) -> dict[str, Any]:
    """The built-in pipelines, with the embedding model (``model``) on ``backend``."""
    return {name: on_backend(name, backend, quantize, model) for name in DEFAULT_PIPELINES}


@deadline_argument
@dataclass
class ServerSettings:
    #: None: the built-in pipelines (bm25, embedding, hybrid) on ``backend``
    pipelines: dict[str, Any] | None = None
    default: str = "hybrid"
    api_keys: list[str] = field(default_factory=list)
    #: the variable keys are read from (None: ``RERANKIT_API_KEYS``; one named must hold one)
    api_key_env: str | None = None
    max_documents: int = 1000
    max_document_chars: int = 20_000
    truncate: bool = True
    max_body_bytes: int = 5_000_000
    timeout: float = 30.0
    max_concurrency: int = 4
    max_queue: int = 64
    max_concurrency_per_pipeline: int = 0
    metrics_public: bool = True
    answer_cache: bool = False
    batching: bool = True
    batch_max_items: int = 256
    batch_max_tokens: int = 16384
    batch_max_wait_ms: float = 5.0
    batch_pairs: str = "off"
    batch_max_pairs: int = 1024
    shutdown_delay: float = 5.0
    graceful_timeout: float = 30.0
    body_timeout: float = 15.0
    header_timeout: float = 10.0
    keep_alive_seconds: float = 5.0
    max_connections: int = 1000
    max_header_bytes: int = 16384
    #: model names added to Cohere's default ones, each onto a pipeline ({}: no alias at all)
    aliases: dict[str, str] | None = None
    ready_when: str = "all"
    stuck_grace: float = 2.0
    retry_max_seconds: float = 300.0
    failing_probe_seconds: float = 5.0
    backend: str = "auto"
    quantize: str = ""
    model: str = ""
    #: the ``[cache]`` table
    cache: CacheSettings = field(default_factory=CacheSettings)
    #: impressions and feedback (``[server.feedback]``, or a path): see :mod:`.feedback`
    feedback: FeedbackSettings | str | None = None
    #: two pipelines to interleave on ``interleave_share`` of the first's requests, and the
    #: share of requests explored (RandPair): see :mod:`.experiments`
    interleave: list[str] | None = None
    interleave_share: float = 0.1
    #: how the two rankings are mixed: ``"optimized"`` or ``"team-draft"``
    interleave_method: str = "optimized"
    explore: float = 0.0
    explore_pairs: float = 0.1
    #: modules imported first (in every worker too), whose scorers, rules and rerankers the
    #: pipelines may name; $RERANKIT_PLUGINS's as well (see :mod:`rerankit.plugins`)
    plugins: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.plugins = plugin_list(self.plugins, "plugins")
        load_plugins(self.plugins, "[server] plugins")
        load_environment()
        check_backend(self.backend, self.quantize or None)
        if isinstance(self.cache, Mapping):
            self.cache = CacheSettings.from_mapping(self.cache)
        if self.pipelines is None:
            self.pipelines = default_pipelines(
                self.backend, self.quantize or None, self.model or None
            )
        else:
            self.pipelines = {
                name: on_backend(spec, self.backend, self.quantize or None, self.model or None)
                for name, spec in self.pipelines.items()
            }
        # a string would make each character a key, "" opens it; a file's [] is refused in
        # from_mapping (here it is the default); no message repeats a key (see .api_keys)
        problem = list_problem(self.api_keys) if self.api_keys != [] else None
        if problem is not None:
            raise ValueError(problem)
        if self.api_key_env is not None and (
            not isinstance(self.api_key_env, str) or not self.api_key_env.strip()
        ):
            raise ValueError(
                f"api_key_env: expected the name of an environment variable, got "
                f"{kind_of(self.api_key_env)}"
            )
        variable = self.api_key_env or API_KEY_ENV
        named = self.api_key_env is not None
        problem = key_variable_problem(variable, named, others=bool(self.api_keys))
        if problem is not None:
            raise ValueError(f"api_key_env: {problem}" if self.api_key_env else problem)
        from_env = env_keys(os.environ.get(variable))
        self.api_keys = list(dict.fromkeys([*self.api_keys, *from_env]))
        if self.default not in self.pipelines:
            raise ValueError(
                f"default pipeline {self.default!r} is not among {sorted(self.pipelines)}"
            )
        for name in (
            "max_documents",
            "max_document_chars",
            "max_body_bytes",
            "max_concurrency",
            "batch_max_items",
            "batch_max_pairs",
            "max_connections",
            "max_header_bytes",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        if not isinstance(self.answer_cache, bool):
            raise ValueError(f"answer_cache must be true or false, got {self.answer_cache!r}")
        if self.batch_pairs not in PAIR_MODES:
            raise ValueError(f"batch_pairs must be one of {', '.join(PAIR_MODES)}")
        if self.batch_max_tokens < 0:
            raise ValueError("batch_max_tokens must be >= 0 (0: no token budget)")
        if not 0 <= self.max_concurrency_per_pipeline <= self.max_concurrency:
            raise ValueError(
                f"max_concurrency_per_pipeline must be between 0 (automatic) and "
                f"max_concurrency ({self.max_concurrency}), got "
                f"{self.max_concurrency_per_pipeline}"
            )
        if self.max_queue < 0 or self.timeout <= 0:
            raise ValueError("max_queue must be >= 0 and deadline > 0 (seconds)")
        if self.shutdown_delay < 0 or self.graceful_timeout < 0:
            raise ValueError("shutdown_delay and graceful_timeout must be >= 0 (seconds)")
        if min(self.body_timeout, self.header_timeout, self.keep_alive_seconds) <= 0:
            raise ValueError("body_timeout, header_timeout and keep_alive_seconds must be > 0")
        # the table's own, then Cohere's names and hybrid's stand-in it does not name; {}: none
        if self.aliases != {}:
            own, stand_in = self.aliases or {}, hybrid_stand_in(self.pipelines, self.default)
            added = {name: self.default for name in COHERE_MODELS if name not in self.pipelines}
            added |= {"hybrid": stand_in} if stand_in is not None else {}
            self.aliases = {**own, **{k: v for k, v in added.items() if k not in own}}
        for alias, target in self.aliases.items():
            if target not in self.pipelines:
                raise ValueError(
                    f"aliases: {alias!r} names pipeline {target!r}, which is not among "
                    f"{sorted(self.pipelines)}"
                )
            if alias in self.pipelines:
                raise ValueError(f"aliases: {alias!r} is already a pipeline's name")
        if self.ready_when not in ("all", "any"):
            raise ValueError(f"ready_when must be 'all' or 'any', got {self.ready_when!r}")
        if self.stuck_grace < 0 or self.retry_max_seconds < 1:
            raise ValueError("stuck_grace must be >= 0 and retry_max_seconds >= 1")
        probe = self.failing_probe_seconds
        if isinstance(probe, bool) or not isinstance(probe, (int, float)) or not probe >= 0:
            raise ValueError(
                f"failing_probe_seconds must be >= 0 (0: a failing pipeline runs every "
                f"request), got {self.failing_probe_seconds!r}"
            )
        check_experiments(self)

    @classmethod
    def from_mapping(cls, spec: Mapping[str, Any]) -> ServerSettings:
        problem = unknown_keys(
            spec, ("server", "pipelines", "cache"), "a settings file", word="table"
        )
        if problem is not None:
            raise ValueError(f"{problem} ([pipelines.NAME] holds the pipelines)")
        server, tables = dict(spec.get("server", {})), ("pipelines", "cache")
        server = server_table(server, [f.name for f in fields(cls) if f.name not in tables])
        if server.get("api_keys") == []:  # (the field's default is [], said open)
            raise ValueError(list_problem([]))
        check_options(cls, server, "[server]")  # each value of its kind, named if not
        pipelines = dict(spec["pipelines"]) if spec.get("pipelines") else None
        if "default" not in server and pipelines is not None:
            server["default"] = "hybrid" if "hybrid" in pipelines else next(iter(pipelines))
        cache = CacheSettings.from_mapping(spec.get("cache") or {})
        return cls(pipelines=pipelines, cache=cache, **server)

    @classmethod
    def from_file(cls, path: str | Path) -> ServerSettings:
        """The settings in a TOML (YAML, JSON) file; a pipeline's relative paths (a
        ``reranker`` pipeline file, a ``model``) that exist beside it are read from there,
        and a relative ``[server.feedback] path`` is taken from its folder."""
        spec = read_spec(path, "settings file")
        return cls.from_mapping(settings_beside(spec, Path(path).resolve().parent))

    def to_mapping(self) -> dict[str, Any]:
        """These settings as the mapping :meth:`from_mapping` reads (for worker processes).
        Keys read from the environment are left out: each process reads them itself."""
        server = {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name not in ("pipelines", "cache")
        }
        from_env = set(env_keys(os.environ.get(self.api_key_env or API_KEY_ENV)))
        server["api_keys"] = [k for k in self.api_keys if k not in from_env]
        if not server["api_keys"]:  # (an empty list is a file's mistake)
            del server["api_keys"]
        if isinstance(self.feedback, FeedbackSettings):
            server["feedback"] = self.feedback.to_mapping()
        return {
            "server": server,
            "pipelines": dict(self.pipelines or {}),
            "cache": self.cache.to_mapping(),
        }

    def pipeline_share(self) -> int:
        """The slots one pipeline may hold at most (see ``max_concurrency_per_pipeline``):
        when 0, every slot for a single pipeline, else ``max_concurrency`` less a quarter of
        it (at least one slot kept for the others; none can be with ``max_concurrency = 1``)."""
        if self.max_concurrency_per_pipeline:
            return self.max_concurrency_per_pipeline
        if len(self.pipelines or {}) < 2:
            return self.max_concurrency
        return max(1, self.max_concurrency - max(1, self.max_concurrency // 4))

    def not_found(self, name: str | None, served: Iterable[str], family: str | None = None) -> str:
        """The 404 for a request's model ``name`` that names none of the ``served``
        pipelines, offering names of the request's API ``family`` first (see
        :func:`.model_names.not_found`)."""
        return not_found(name, served, self.aliases or {}, self.default, family)

    def resolve(self, model: str | None) -> str | None:
        """The pipeline a request's ``model`` names: the default when none, through
        ``aliases``; an unknown name is returned as is (the caller answers 404)."""
        if not model:
            return self.default
        return (self.aliases or {}).get(model, model)
