"""What the LLM scorers share: the runner, the judgment cache, the usage counter."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any, TypedDict
from urllib.parse import urlsplit, urlunsplit

from ..cache import JudgmentCache, judgment_cache
from ..llm.base import LLMClient, LLMRequest
from ..llm.declared import retry_policy
from ..llm.keywords import RATE_HINTS, unknown_keywords
from ..llm.resilience import CallRunner, Limits, RetryPolicy
from ..options import factory_options

#: a RetryPolicy's fields (``timeout``, ``attempts``, ...) given to the scorer itself: where
#: they go instead, as a pipeline file's ``retry = {...}`` table says it for a file
_RETRY_FIELDS = tuple(f.name for f in fields(RetryPolicy))
_PYTHON_HINTS = {
    **{
        key: f"pass it in a RetryPolicy: retry=RetryPolicy({key}=...) "
        f"(from rerankit.llm; its fields: {', '.join(_RETRY_FIELDS)})"
        for key in _RETRY_FIELDS
    },
    "api_key": "it is the client's: OpenAIClient(api_key=...) or GeminiClient(api_key=...)",
    "model": "it is the client's: OpenAIClient(model=...) or GeminiClient(model=...)",
    "base_url": "it is the client's: OpenAIClient(base_url=...) or GeminiClient(base_url=...)",
    **RATE_HINTS,
}


class LLMScorerOptions(TypedDict, total=False):
    """What every LLM scorer takes besides its own settings: ``cache`` (True: the default
    judgment cache, in the Redis/Valkey server ``$RERANKIT_CACHE_URL`` names, else an SQLite
    file; False; or a :class:`~rerankit.cache.JudgmentCache`), ``retry`` (a
    :class:`~rerankit.llm.RetryPolicy`), ``max_concurrency`` (calls in flight, default 16),
    ``requests_per_minute``, ``max_output_tokens``, ``temperature`` (default 0), and
    ``limits``: a :class:`~rerankit.llm.Limits` shared with other scorers (instead of the
    scorer's own ``max_concurrency`` and ``requests_per_minute``; giving both is a
    ValueError). Limits hold across ``rerank()`` calls, event loops and threads."""

    cache: Any
    retry: RetryPolicy | None
    max_concurrency: int
    requests_per_minute: float | None
    max_output_tokens: int | None
    temperature: float
    limits: Limits | None


class LLMScorerBase:
    name: str

    def __init__(
        self,
        client: LLMClient,
        *,
        name: str,
        cache: Any = True,
        retry: RetryPolicy | None = None,
        max_concurrency: int | None = None,
        requests_per_minute: float | None = None,
        max_output_tokens: int | None = None,
        temperature: float = 0.0,
        limits: Limits | None = None,
        **unknown: Any,
    ) -> None:
        if unknown:  # a keyword no LLM scorer takes: name those it does, and where it goes
            what = type(self).__name__
            known = [k for k in factory_options(type(self)) or () if k != "client"]
            raise unknown_keywords(unknown, known, what, _PYTHON_HINTS, "option")
        if not isinstance(client, LLMClient):
            raise TypeError(f"{client!r} is not an LLM client (needs provider, model, generate)")
        if isinstance(retry, Mapping):  # a file's retry table, given in Python: the same policy
            retry = retry_policy(retry)
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise TypeError(
                f"retry must be a RetryPolicy (from rerankit.llm import RetryPolicy) or a dict "
                f"of its fields ({', '.join(_RETRY_FIELDS)}), got {type(retry).__name__}"
            )
        self.client, self.name = client, name
        self.runner = CallRunner(
            client,
            retry,
            max_concurrency=max_concurrency,
            requests_per_minute=requests_per_minute,
            limits=limits,
        )
        self.cache: JudgmentCache | None = judgment_cache(cache)
        self.max_output_tokens = max_output_tokens
        self.temperature = temperature

    def cache_key(self, request: LLMRequest) -> str:
        """The judgment cache's key for ``request``: a hash of everything the provider is
        sent (system text, prompt, schema, temperature, output limit), of the provider and
        model, and of the server's address (:func:`endpoint`) when it is not the provider's
        own. An edited prompt template gives new keys by itself; the same model name on
        another server never shares judgments."""
        parts: dict[str, Any] = {}
        address = endpoint(self.client)
        if address is not None:  # left out for the provider's own: its keys stay as they were
            parts["endpoint"] = address
        return JudgmentCache.key(
            provider=self.client.provider,
            model=self.client.model,
            system=request.system,
            prompt=request.prompt,
            schema=request.json_schema,
            temperature=request.temperature,
            max_output_tokens=request.max_output_tokens,
            **parts,
        )


#: each provider's own address, which a client may also name explicitly
_DEFAULT_ENDPOINTS = {
    "openai": "https://api.openai.com/v1",
    "gemini": "https://generativelanguage.googleapis.com",
}


def endpoint(client: LLMClient) -> str | None:
    """The address ``client`` sends to, normalised (scheme and host in lower case, a
    default port and a trailing ``/`` dropped), or None for the provider's own. A client's
    ``address`` (where its calls go, an environment variable such as
    ``GOOGLE_GEMINI_BASE_URL`` included) is read before its ``base_url``."""
    url = getattr(client, "address", None) or getattr(client, "base_url", None)
    if not url:
        return None
    parsed = urlsplit(str(url).strip())
    scheme, host = parsed.scheme.lower(), (parsed.hostname or "").lower()
    if ":" in host:  # an IPv6 address keeps its brackets
        host = f"[{host}]"
    port = parsed.port
    if port is not None and (scheme, port) not in (("http", 80), ("https", 443)):
        host = f"{host}:{port}"
    address = urlunsplit((scheme, host, parsed.path.rstrip("/"), parsed.query, ""))
    return None if address == _DEFAULT_ENDPOINTS.get(client.provider) else address
