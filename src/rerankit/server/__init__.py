"""rerankit's HTTP service (extra ``server``): ``rerankit serve``."""

from .settings import ServerSettings

__all__ = ["ServerSettings", "create_app", "serve"]


def create_app(settings: ServerSettings | None = None):
    from .app import create_app as make

    return make(settings)


def serve(
    settings: ServerSettings | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 8080,
    graceful_seconds: float = 30.0,
) -> None:
    """Run the service with uvicorn until interrupted; requests in flight are finished on
    shutdown (up to ``graceful_seconds``)."""
    from .._optional import require

    uvicorn = require("uvicorn", "rerankit serve")
    uvicorn.run(
        create_app(settings),
        host=host,
        port=port,
        log_level="info",
        timeout_graceful_shutdown=graceful_seconds,
    )
