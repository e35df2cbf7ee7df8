"""Gemini through the official ``google-genai`` SDK (extra ``gemini``)."""

from __future__ import annotations

import json
import os
from typing import Any

from .._optional import require
from ..errors import ConfigError, ProviderError
from ._errors import PerLoop, from_status, from_transport, not_json, where
from .base import LLMRequest, LLMResponse
from .declared import RETRY_KEYS
from .keywords import checked_keywords, scorer_hints

__all__ = ["DEFAULT_GEMINI_MODEL", "GeminiClient"]

DEFAULT_GEMINI_MODEL = "gemini-2.0-flash"
_DEFAULT_URL = "https://generativelanguage.googleapis.com"


@checked_keywords(scorer_hints(RETRY_KEYS))
class GeminiClient:
    """``generateContent`` on Gemini. ``api_key`` defaults to ``GEMINI_API_KEY`` or
    ``GOOGLE_API_KEY``; ``base_url`` points the SDK elsewhere (a proxy, a local server).
    Structured output uses Gemini's JSON-schema setting. The SDK's own retries are off:
    rerankit's :class:`~rerankit.llm.CallRunner` retries and counts. A failed call's message
    names where it went: ``gemini at <base_url, or Gemini's own address> (model '...'):
    ...`` (never the key)."""

    provider = "gemini"

    def __init__(
        self,
        api_key: str | None = None,
        model: str = DEFAULT_GEMINI_MODEL,
        *,
        base_url: str | None = None,
        api_version: str | None = None,
    ) -> None:
        key = api_key or os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY")
        if not key:
            raise ConfigError(
                "no Gemini API key: pass api_key= or set GEMINI_API_KEY (or GOOGLE_API_KEY)"
            )
        genai = require("google.genai", "GeminiClient")
        self._types = genai.types
        self._errors = require("google.genai.errors", "GeminiClient")
        self.model, self.base_url = model, base_url
        #: where calls go, as failure messages name it (the SDK reads the variable too)
        self.address = base_url or os.environ.get("GOOGLE_GEMINI_BASE_URL") or _DEFAULT_URL
        options = self._types.HttpOptions(
            base_url=base_url,
            api_version=api_version,
            retry_options=self._types.HttpRetryOptions(attempts=1),
        )
        self._sdk = PerLoop(
            lambda: genai.Client(api_key=key, http_options=options),
            lambda sdk: sdk.aio.aclose(),
        )

    def _config(self, request: LLMRequest, timeout: float) -> Any:
        t = self._types
        config: dict[str, Any] = {
            "temperature": request.temperature,
            "http_options": t.HttpOptions(timeout=int(timeout * 1000)),
        }
        if request.system:
            config["system_instruction"] = request.system
        if request.max_output_tokens:
            config["max_output_tokens"] = request.max_output_tokens
        if request.json_schema is not None:
            config["response_mime_type"] = "application/json"
            config["response_json_schema"] = request.json_schema
        return t.GenerateContentConfig(**config)

    async def generate(self, request: LLMRequest, *, timeout: float) -> LLMResponse:
        try:
            sdk = await self._sdk.get()
            response = await sdk.aio.models.generate_content(
                model=self.model, contents=request.prompt, config=self._config(request, timeout)
            )
        except self._errors.APIError as exc:
            headers = getattr(getattr(exc, "response", None), "headers", None)
            raise from_status(
                where(self), int(exc.code or 0), exc.message or str(exc), headers
            ) from exc
        except ProviderError:
            raise
        except json.JSONDecodeError as exc:  # the SDK reads any 200 body as JSON
            raise not_json(where(self), exc.doc) from exc
        except Exception as exc:
            raise from_transport(where(self), exc, timeout) from exc
        text = ""
        for candidate in response.candidates or ():
            parts = candidate.content.parts if candidate.content else None
            text += "".join(p.text or "" for p in parts or ())
            break
        meta = response.usage_metadata
        return LLMResponse(
            text=text,
            input_tokens=int(getattr(meta, "prompt_token_count", 0) or 0),
            output_tokens=int(getattr(meta, "candidates_token_count", 0) or 0),
        )

    def __repr__(self) -> str:
        return f"GeminiClient(model={self.model!r})"
