"""The playground page (``GET /playground``): static files served by the service itself,
no build step and nothing from a CDN. The page calls ``/v1/models``, ``/info`` and
``/v1/explain`` with the key typed into it."""

from __future__ import annotations

from importlib import resources

#: the files the page loads, and their media types
ASSETS = {
    "index.html": "text/html; charset=utf-8",
    "playground.js": "text/javascript; charset=utf-8",
    "playground.css": "text/css; charset=utf-8",
    "sample.json": "application/json",
}

#: the page loads nothing from elsewhere, and runs no inline script
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'"
)


def asset(name: str) -> bytes:
    """The bytes of one of :data:`ASSETS` (KeyError for any other name)."""
    if name not in ASSETS:
        raise KeyError(name)
    return resources.files(__name__).joinpath(name).read_bytes()
