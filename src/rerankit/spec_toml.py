"""A pipeline spec written as TOML (what ``rerankit tune`` and learning write)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["to_toml"]


def to_toml(spec: Mapping[str, Any], comment: str = "") -> str:
    """A pipeline spec (a name and stages of plain values, as ``rerankit tune`` writes
    them, or a name and a ``reranker``) as TOML."""

    def value(v: Any) -> str:
        if isinstance(v, str):
            return json.dumps(v)  # a TOML basic string is JSON-escaped
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, Mapping):  # an inline table
            return "{ " + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + " }"
        return repr(v)

    lines = [f"# {line}" for line in comment.splitlines()] if comment else []
    lines.append(f"name = {value(spec['name'])}")
    lines += [f"{k} = {value(v)}" for k, v in spec.items() if k not in ("name", "stages")]
    for stage in spec.get("stages", ()):
        lines += ["", "[[stages]]"]
        for k, v in stage.items():
            if k == "scorers":
                lines.append("scorers = [")
                for entry in v:
                    inner = ", ".join(f"{ek} = {value(ev)}" for ek, ev in entry.items())
                    lines.append(f"  {{ {inner} }},")
                lines.append("]")
            else:
                lines.append(f"{k} = {value(v)}")
    return "\n".join(lines) + "\n"
