"""``check``'s parser: its flags, their help and checks, and nothing the
command runs (:mod:`rerankit.cli.check`, imported when it runs)."""

from __future__ import annotations

from typing import Any

from ..args import (
    add_backend_arguments,
    examples,
)

__all__ = ["add_commands"]


def add_commands(sub: Any) -> None:
    """``check``."""
    check = sub.add_parser(
        "check",
        help="check pipeline files, or the service's settings file, without running them",
        description="Build each pipeline file (.toml, .yaml, .json) as -r FILE would and say "
        "what it runs, or the mistake (ConfigError: the stage, the key): no documents are "
        "needed and no model is loaded. Each ok line names the models it runs and on which "
        "backend (onnx, onnx-int8 or torch, as backend auto resolves in this install, named as "
        "/info names them). A model this install cannot load (no torch and no ONNX export of "
        "it) is a mistake saying how to export it, so run check with the install that will "
        "serve; so is a model folder holding no weights (its config and tokenizer only), "
        "naming the weight files looked for; other failures to load show on first use, and "
        "a model that is neither a folder nor in the local Hugging "
        "Face cache is warned of: it will be fetched from the hub; a model path whose folder "
        "is not here (a volume not mounted) is warned of as no such folder, in any install. The "
        "service's settings file ([server], [pipelines.NAME], [cache]) is checked as `serve "
        "--settings FILE` reads it: its tables, then each pipeline it serves, one line each "
        "(check it before restarting a replica), with the scale the service answers (a "
        "cross-encoder's: scores unit (raw_scores logit), as /info says). [server] and "
        "[cache] stop at their first mistake: fix it and rerun. An environment variable "
        "the file names, an API-key "
        "variable (api_key_env, RERANKIT_API_KEYS) or an LLM provider's key (OPENAI_API_KEY) "
        "that is not set here, or is set but empty, is a warning naming it, and the check "
        "goes on (CI has no secrets; serve needs them), as is a deadline longer than "
        "graceful_timeout, and an LLM judge whose one call (retry's attempts x timeout, plus "
        "the waits) can take longer than the deadline, naming both and what to change. "
        "So is a pipeline whose stages undo a rule's order (mmr after a cap, an LLM judge "
        "after a pin: the rule's order is lost), as building it logs. "
        "A settings file's keys line says whether the service will need "
        "an API key and how many come from api_keys and from the variable (counts, never a "
        "key), or that it will be open; its cache line says where answers, LLM judgments and "
        "embeddings are kept and for how long, and whether the Redis server answered one PING "
        "from here (no answer is said, never a mistake: run check where serve runs; a server "
        "that answers and refuses the url's password is a warning, a mistake with [cache] "
        "required = true, as serve would never be ready); a cache "
        "directory (RERANKIT_CACHE_DIR) this user cannot write is a warning (serve keeps "
        "nothing there), and a mistake with answer_cache = true and no [cache] url (serve "
        "would not start); with "
        "[server.feedback], a line says where the "
        "click log is and what it keeps (texts or hashes, for how long), and one each what "
        "interleave and explore will do to the answers. Every line (ok, "
        "warning, mistake) goes to standard output, in order. With --clicks LOG, a click log "
        "is checked as tune --clicks reads it (docs/clicks.md). Exit status 1 when any file, "
        "pipeline or log has a mistake.",
        **examples(
            "rerankit check pipeline.toml",
            "rerankit check service.toml  # every pipeline the service would serve",
            "rerankit check service.toml --reranker tuned.toml  # as serve runs them together",
            "rerankit check tuned.toml --model minilm-onnx  # as serve -r tuned.toml --model",
            "rerankit check --clicks clicks.jsonl --data corpus.jsonl  # before tune --clicks",
        ),
    )
    check.add_argument(
        "files", nargs="*", metavar="FILE", help="pipeline files or service settings files"
    )
    check.add_argument(
        "--clicks",
        action="append",
        metavar="LOG",
        help="check a click log (with its rotated files; repeat for several replicas' logs) "
        "as tune --clicks reads it: bad lines and fields the format lacks by file and line, "
        "feedback left out, texts not found, enough queries with a click; exit 1 on a mistake",
    )
    check.add_argument(
        "--data", default=None, help="with --clicks: the corpus of a log of hashes or ids"
    )
    check.add_argument(
        "--reranker",
        "-r",
        default=None,
        help="check each settings file as `rerankit serve --settings FILE --reranker X` "
        "serves it: X (a registered name, a pipeline file, a model folder or hub id) added "
        "to the file's [pipelines] as the default, or alone when the file declares none, "
        "so [server.aliases] may name it",
    )
    check.add_argument(
        "--model",
        default=None,
        help="check as `serve --model MODEL` (or `rank -r FILE --model MODEL`) runs it: the "
        "built-in hybrid's and embedding's model, wherever a file names them (an export "
        "folder on a torch-free install)",
    )
    add_backend_arguments(check)
