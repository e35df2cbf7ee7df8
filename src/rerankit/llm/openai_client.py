"""OpenAI and OpenAI-compatible servers (vLLM, Ollama, llama.cpp, ...) through the ``openai``
SDK (extra ``openai``)."""

from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import urlsplit

from .._optional import require
from ..errors import ConfigError, ProviderError
from ._errors import PerLoop, from_status, from_transport, not_json, where
from .base import LLMRequest, LLMResponse
from .declared import RETRY_KEYS
from .keywords import checked_keywords, scorer_hints

__all__ = ["DEFAULT_OPENAI_MODEL", "OpenAIClient"]

DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
#: where the SDK sends calls without a base_url
_OPENAI_ADDRESS = "https://api.openai.com/v1"
JSON_MODES = ("schema", "object", "none")
#: a path segment naming an API version: v1, v1beta, v2alpha, ...
_VERSION = re.compile(r"v\d+\w*")


@checked_keywords(scorer_hints(RETRY_KEYS))
class OpenAIClient:
    """``chat/completions`` on OpenAI or a compatible server at ``base_url``.

    ``api_key`` defaults to ``OPENAI_API_KEY`` and ``base_url`` to ``OPENAI_BASE_URL``; with
    a ``base_url`` and no key, a placeholder is sent (local servers ignore it).
    ``json_mode``: ``"schema"`` (strict JSON schema, the default), ``"object"`` (JSON mode,
    for servers without schema support) or ``"none"`` (plain text; rerankit's parsers take
    it from there). The SDK's own retries are off. A failed call's message names where it
    went: ``openai at <base_url, or OpenAI's own address> (model '...'): connection
    refused`` (never the key).
    """

    provider = "openai"

    def __init__(
        self,
        api_key: str | None = None,
        model: str = DEFAULT_OPENAI_MODEL,
        *,
        base_url: str | None = None,
        json_mode: str = "schema",
    ) -> None:
        if json_mode not in JSON_MODES:
            raise ValueError(f"json_mode must be one of {', '.join(JSON_MODES)}, got {json_mode!r}")
        base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None  # as the SDK reads it
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            if base_url is None:
                raise ConfigError(
                    "no OpenAI API key: set OPENAI_API_KEY (a pipeline file may name another "
                    "variable with api_key_env; Python may pass api_key=), or give a base_url "
                    "(or OPENAI_BASE_URL) for a local server that needs none"
                )
            key = "unused"
        openai = require("openai", "OpenAIClient")
        self._openai = openai
        self.model, self.base_url, self.json_mode = model, base_url, json_mode
        #: where calls go, as failure messages name it
        self.address = base_url or _OPENAI_ADDRESS
        self._key = key
        self._sdk = PerLoop(
            lambda: openai.AsyncOpenAI(api_key=self._key, base_url=base_url, max_retries=0),
            lambda sdk: sdk.close(),
        )

    def _response_format(self, request: LLMRequest) -> dict[str, Any] | None:
        if request.json_schema is None or self.json_mode == "none":
            return None
        if self.json_mode == "object":
            return {"type": "json_object"}
        return {
            "type": "json_schema",
            "json_schema": {
                "name": request.schema_name,
                "schema": request.json_schema,
                "strict": True,
            },
        }

    async def generate(self, request: LLMRequest, *, timeout: float) -> LLMResponse:
        messages = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages.append({"role": "user", "content": request.prompt})
        options: dict[str, Any] = {"temperature": request.temperature, "timeout": timeout}
        if request.max_output_tokens:
            options["max_tokens"] = request.max_output_tokens
        response_format = self._response_format(request)
        if response_format is not None:
            options["response_format"] = response_format
        oa = self._openai
        try:
            sdk = await self._sdk.get()
            raw = await sdk.chat.completions.with_raw_response.create(
                model=self.model, messages=messages, **options
            )
        except oa.APIStatusError as exc:
            message = getattr(exc, "message", None) or str(exc)
            raise from_status(
                where(self),
                exc.status_code,
                message + self._path_hint(exc.status_code),
                exc.response.headers,
            ) from exc
        except ProviderError:
            raise
        except Exception as exc:  # APIConnectionError / APITimeoutError and transport errors
            raise from_transport(where(self), exc, timeout) from exc
        try:
            response = raw.parse()  # the SDK hands back a body that is not JSON as a str
        except ValueError:  # a JSON content type on a body that is not JSON
            response = None
        if not hasattr(response, "choices"):
            raise not_json(where(self), raw.text, raw.headers.get("content-type"))
        text = response.choices[0].message.content or "" if response.choices else ""
        usage = response.usage
        return LLMResponse(
            text=text,
            input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        )

    def _path_hint(self, status: int) -> str:
        """For a 404 from a server whose ``base_url`` has no version in its path
        (``http://host:8000`` rather than ``http://host:8000/v1``), a question that points
        at it: the SDK asks ``base_url + "/chat/completions"``."""
        if status != 404 or not self.base_url:
            return ""
        path = urlsplit(str(self.base_url)).path
        if any(_VERSION.fullmatch(part) for part in path.split("/")):
            return ""
        return (
            f" (does base_url end in /v1? it is {self.base_url!r}, and the request went to "
            f"{str(self.base_url).rstrip('/')}/chat/completions)"
        )

    def __repr__(self) -> str:
        return f"OpenAIClient(model={self.model!r}, base_url={self.base_url!r})"
