"""The pages the service serves itself: the API's Swagger UI at ``/docs`` (its assets from
the ``fastapi-swagger`` package, so it works offline) and the playground."""

from __future__ import annotations

from importlib import resources
from typing import Any

from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import Response

from ..errors import ServiceError
from . import playground

__all__ = ["add_pages"]


def add_pages(app: Any) -> None:
    """``/docs`` and ``/playground`` with their assets."""
    swagger_assets = {  # Swagger UI 5 (Apache-2.0), shipped by the fastapi-swagger package
        "swagger-ui-bundle.js": "application/javascript",
        "swagger-ui.css": "text/css",
        "favicon-32x32.png": "image/png",
    }

    @app.get("/docs", include_in_schema=False)
    async def docs() -> Any:
        """The API's Swagger UI, every asset served by this service (works offline)."""
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title="rerankit API",
            swagger_js_url="/docs/assets/swagger-ui-bundle.js",
            swagger_css_url="/docs/assets/swagger-ui.css",
            swagger_favicon_url="/docs/assets/favicon-32x32.png",
        )

    @app.get("/docs/assets/{name}", include_in_schema=False)
    async def docs_asset(name: str) -> Any:

        if name not in swagger_assets:
            raise ServiceError(404, f"no asset {name!r}", code="not_found")
        try:
            data = resources.files("fastapi_swagger.resources").joinpath(name).read_bytes()
        except (ImportError, OSError) as exc:
            raise ServiceError(
                404,
                "Swagger UI assets need the 'fastapi-swagger' package (extra 'server')",
                code="not_found",
            ) from exc
        return Response(data, media_type=swagger_assets[name])

    @app.get("/playground", include_in_schema=False)
    async def playground_page() -> Any:
        """The playground page (public like /docs; its API calls carry the key)."""
        return playground_file("index.html")

    @app.get("/playground/{name}", include_in_schema=False)
    async def playground_asset(name: str) -> Any:
        return playground_file(name)

    def playground_file(name: str) -> Any:

        try:
            data = playground.asset(name)
        except KeyError:
            raise ServiceError(404, f"no playground file {name!r}", code="not_found") from None
        headers = {
            "Content-Security-Policy": playground.CONTENT_SECURITY_POLICY,
            "X-Content-Type-Options": "nosniff",
            "Cache-Control": "no-cache",
        }
        return Response(data, media_type=playground.ASSETS[name], headers=headers)
