"""A real answer against the OpenAPI document a service serves: its status is declared for
the operation, its content type too, its JSON body validates against the declared schema
read closed (an object schema that names its properties takes no other, unless it says
``additionalProperties``: so a field the document leaves out fails), and its headers are
the declared ones (each required one sent, each sent one of the service's own declared,
each value of its schema)."""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator, FormatChecker

#: the answer headers the service sets itself (the others are the server's: date, ...)
OWN_HEADERS = ("retry-after", "allow", "www-authenticate")


def closed(schema: Any) -> Any:
    """``schema`` with every object schema that lists its properties closed to others
    (where it does not say ``additionalProperties`` itself)."""
    if isinstance(schema, list):
        return [closed(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: closed(v) for k, v in schema.items()}
    if "properties" in schema and "additionalProperties" not in schema:
        out["additionalProperties"] = False
    return out


def _value(text: str, schema: dict[str, Any]) -> Any:
    """A header's text as the JSON value its schema describes."""
    kind = schema.get("type")
    if kind == "integer":
        return int(text)
    if kind == "number":
        return float(text)
    return text


class Document:
    """The OpenAPI document ``doc``; :meth:`check` an answer against it. ``seen`` holds
    each ``(METHOD path, status)`` checked."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.components = closed(doc["components"])
        self.seen: set[tuple[str, int]] = set()

    def _resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in node:
            kind, name = node["$ref"].split("/")[-2:]
            node = self.doc["components"][kind][name]
        return node

    def problems(self, schema: dict[str, Any], value: Any) -> list[str]:
        """What in ``value`` breaks ``schema`` (read closed)."""
        full = {**closed(schema), "components": self.components}
        validator = Draft202012Validator(full, format_checker=FormatChecker())
        return [
            f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in validator.iter_errors(value)
        ]

    def check(self, method: str, path: str, answer: Any) -> None:
        """``answer`` (an httpx response to ``method path``) as the document says it."""
        label = f"{method.upper()} {path}"
        operation = self.doc["paths"][path][method.lower()]
        status = answer.status_code
        declared = operation["responses"].get(str(status))
        assert declared is not None, f"{label}: {status} is not declared: {answer.text[:300]}"
        declared = self._resolve(declared)
        media = answer.headers["content-type"].split(";")[0].strip()
        assert media in declared.get("content", {}), f"{label} {status}: {media} not declared"
        if media == "application/json":
            schema = declared["content"][media]["schema"]
            wrong = self.problems(schema, answer.json())
            assert not wrong, f"{label} {status}: {wrong}\n{answer.text[:2000]}"
        headers = {n.lower(): self._resolve(h) for n, h in declared.get("headers", {}).items()}
        for name, header in headers.items():
            if header.get("required"):
                assert name in answer.headers, f"{label} {status}: no {name} header"
            if name in answer.headers:
                value = _value(answer.headers[name], header["schema"])
                wrong = self.problems(header["schema"], value)
                assert not wrong, f"{label} {status}: header {name}: {wrong}"
        own = {n for n in answer.headers if n.startswith("x-") or n in OWN_HEADERS}
        assert own <= set(headers), f"{label} {status}: undeclared {sorted(own - set(headers))}"
        self.seen.add((label, status))

    def operations(self) -> set[str]:
        return {f"{m.upper()} {p}" for p, ops in self.doc["paths"].items() for m in ops}
