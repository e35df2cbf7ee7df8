"""The package's shape, read from its source: imports only down the layers of
docs/layout.md (which shows the same table), no import cycle, no private name imported
from another module, no private module imported from outside its package, no file over
450 lines."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "rerankit"


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _imports(name: str) -> list[tuple[str, str | None, int]]:
    """(module imported, name taken from it or None, line) for every import in ``name``,
    at any depth, resolved to absolute module names."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    base = name if _is_package(name) else name.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, None, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = base.split(".")
                anchor = ".".join(parts[: len(parts) - node.level + 1])
                module = f"{anchor}.{node.module}" if node.module else anchor
            else:
                module = node.module or ""
            for alias in node.names:
                if f"{module}.{alias.name}" in MODULES:  # `from . import x`: the module x
                    out.append((f"{module}.{alias.name}", None, node.lineno))
                else:
                    out.append((module, alias.name, node.lineno))
    return [(m, n, line) for m, n, line in out if m.split(".")[0] == "rerankit"]


GRAPH = {
    name: sorted({m for m, _, _ in _imports(name) if m in MODULES and m != name})
    for name in MODULES
}


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_cycle():
    saved = dict(GRAPH)
    try:
        GRAPH["rerankit.types"] = [*GRAPH["rerankit.types"], "rerankit.api"]
        assert any("rerankit.types" in c for c in _cycles())  # api reaches types
    finally:
        GRAPH.clear()
        GRAPH.update(saved)


def test_no_import_cycle_anywhere_in_the_package():
    assert _cycles() == []


def test_no_private_name_or_module_is_imported_from_elsewhere():
    wrong = []
    for name in MODULES:
        for module, taken, line in _imports(name):
            if taken is not None and taken.startswith("_") and not taken.startswith("__"):
                wrong.append(f"{name}:{line} imports {taken} from {module}")
            parts = module.split(".")
            for i, part in enumerate(parts):
                owner = ".".join(parts[:i])  # the package the private module belongs to
                if (
                    part.startswith("_")
                    and not part.startswith("__")
                    and not (name == owner or name.startswith(owner + "."))
                ):
                    wrong.append(f"{name}:{line} imports the private module {module}")
    assert wrong == []


#: The layers, lowest first; docs/layout.md shows the same table. A module may import the
#: modules of its own layer and of every layer below it in ``STACK``; nothing else. A place
#: is a top-level module or package of ``rerankit`` (``rerankit`` itself: its ``__init__``).
STACK = (
    (
        "foundation",
        (
            "types",
            "errors",
            "registry",
            "plugins",
            "options",
            "spec_toml",
            "spans",
            "_optional",
            "_jsonl",
            "_threads",
            "_paths",
            "_once",
            "_words",
            "_renamed",
        ),
    ),
    ("documents", ("documents", "docfields", "titles")),
    ("text", ("text",)),
    ("numbers", ("normalize", "calibration")),
    ("backends", ("backends",)),
    ("cache", ("cache",)),
    ("llm", ("llm",)),
    ("scorers", ("scorers",)),
    ("combining", ("fusion", "ordering", "outcome", "pins", "caps")),
    ("rerankers", ("rerankers",)),
    ("config", ("config",)),
    ("api", ("api", "rerankit")),
)
#: The layers on the api: each may import the whole stack and, beside it, only the layers
#: on the api it names (none imports ``cli`` or ``old paths``; ``eval`` and ``batch`` never
#: import each other's way up: ``batch`` reads ``eval``, not the reverse).
TOP = (
    ("eval", ("eval",), ()),
    ("training", ("training",), ("eval",)),
    ("batch", ("batch",), ("eval",)),
    ("server", ("server",), ("training",)),
    ("adapters", ("compat", "integrations"), ()),
    ("cli", ("cli", "__main__"), ("eval", "training", "batch", "server")),
    ("old paths", ("pipeline", "hardware", "testing"), ()),
)


def _place(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _layer_of() -> dict[str, str]:
    return {place: layer for layer, places, *_ in (*STACK, *TOP) for place in places}


def _may_import(layer: str, other: str) -> bool:
    order = [name for name, _ in STACK]
    if other in order:  # the stack: this layer or one below (every layer on the api may)
        return layer not in order or order.index(other) <= order.index(layer)
    above = {name: allowed for name, _, allowed in TOP}
    return layer in above and (other == layer or other in above[layer])


def _imports_up(edges: list[tuple[str, str, int]]) -> list[str]:
    """The imports among ``edges`` (importer, imported, line) that go up a layer, and the
    modules that belong to no layer."""
    layer_of = _layer_of()
    wrong = []
    for importer, imported, line in edges:
        here, there = layer_of.get(_place(importer)), layer_of.get(_place(imported))
        if here is None or there is None:
            missing = importer if here is None else imported
            wrong.append(f"{missing} is in no layer: add its place to STACK or TOP")
        elif not _may_import(here, there):
            wrong.append(f"{importer}:{line} ({here}) imports {imported} ({there})")
    return wrong


def _lazy_imports(name: str) -> list[tuple[str, str, int]]:
    """(module, name, line) for each name a package's ``_LAZY`` table (name -> submodule)
    imports on first use through its ``__getattr__``: an import the ``import`` statements
    do not show. (``rerankit.<part>`` reached by attribute, the front door's ``_PARTS``, is
    what ``import rerankit.<part>`` does: not counted.)"""
    if not _is_package(name):
        return []
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    out = []
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else None
        if isinstance(target, ast.Name) and target.id == "_LAZY":
            table = ast.literal_eval(node.value)
            out += [(f"{name}.{module}", taken, node.lineno) for taken, module in table.items()]
    return out


#: imports up a layer that stay on purpose: the front door's ``rerankit.evaluate``
#: (``rerankit eval`` in one call) is imported from ``eval`` when first used
UP_ON_PURPOSE = {("rerankit", "rerankit.eval")}

EDGES = [
    (name, module, line)
    for name in MODULES
    for module, _, line in _imports(name) + _lazy_imports(name)
    if module in MODULES and module != name and (name, module) not in UP_ON_PURPOSE
]


def _factory_modules() -> list[tuple[str, str, int]]:
    """("rerankit.config", module, 0) for each built-in name's factory string: the module
    :func:`rerankit.config.create` imports to build it."""
    from rerankit import registry

    out = []
    for kind in registry.KINDS:
        for entry in registry.entries(kind):
            if isinstance(entry.factory, str):
                module = entry.factory.partition(":")[0]
                module = f"rerankit{module}" if module.startswith(".") else module
                out.append(("rerankit.config", module, 0))
    return out


def test_imports_only_point_down_the_layers():
    """Every import, at module level or inside a function, goes to the importer's own
    layer or one below it: no exceptions."""
    assert _imports_up(EDGES) == []


def test_a_name_a_package_imports_on_first_use_is_an_import():
    assert ("rerankit.eval.evaluation", "evaluate") in [
        (m, n) for m, n, _ in _lazy_imports("rerankit.eval")
    ]
    front_door = {m for m, _, _ in _lazy_imports("rerankit")}
    assert {"rerankit.api", "rerankit.eval"} <= front_door
    assert _imports_up([("rerankit", "rerankit.eval", 1)]) != []  # so listed on purpose


def test_the_registry_names_factories_config_may_import():
    """A built-in's factory string is an import :mod:`rerankit.config` makes when the name
    is built: it points down from ``config`` as config's own imports do."""
    modules = _factory_modules()
    assert ("rerankit.config", "rerankit.scorers.lexical", 0) in modules
    assert _imports_up([m for m in modules if m[1] in MODULES]) == []
    assert [m for _, m, _ in modules if m not in MODULES] == []


def test_an_import_up_a_layer_is_caught():
    assert _imports_up([("rerankit.text.words", "rerankit.scorers.base", 1)]) == [
        "rerankit.text.words:1 (text) imports rerankit.scorers.base (scorers)"
    ]
    assert _imports_up([("rerankit.eval.runner", "rerankit.batch.ray", 2)]) != []
    assert _imports_up([("rerankit.batch.beir", "rerankit.eval.runner", 3)]) == []
    assert _imports_up([("rerankit.newplace", "rerankit.types", 4)]) != []


def _layers_shown(page: str) -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
    """(layer, places, layers it may also import) for each row of a layout page's table."""

    def names(cell: str) -> tuple[str, ...]:
        return tuple(p.strip("`/ ") for p in cell.split(",") if p.strip())

    rows = [
        line.split("|")
        for line in page.splitlines()
        if line.startswith("| ") and not line.startswith("| layer")
    ]
    return [(row[1].strip(), names(row[2]), names(row[4])) for row in rows]


KEPT = [(name, places, ()) for name, places in STACK] + list(TOP)


def test_the_layout_page_shows_the_layers_the_test_keeps():
    """docs/layout.md's table lists these layers, in this order, with these places, and
    what each layer on the api may also import."""
    page = (SRC.parent / "docs" / "layout.md").read_text(encoding="utf-8")
    assert _layers_shown(page) == KEPT


def test_a_layout_page_that_says_another_import_is_caught():
    row = "| batch | `batch/` | rows, engines | `eval` |"
    assert ("batch", ("batch",), ("eval",)) in KEPT
    assert _layers_shown(row) == [("batch", ("batch",), ("eval",))]
    assert _layers_shown(row.replace("`eval`", "`eval`, `server`")) != [
        ("batch", ("batch",), ("eval",))
    ]


def test_the_layout_page_names_the_test_folders_there_are():
    """docs/layout.md's paragraph on ``tests/`` names each folder it has, and no other."""
    page = (SRC.parent / "docs" / "layout.md").read_text(encoding="utf-8")
    paragraph = page.split("`tests/` follows the layers", 1)[1].split("\n\n", 1)[0]
    named = set(re.findall(r"`(\w+)/?`", paragraph))
    tests = SRC.parent / "tests"
    # (folders of Python files: the page tests' screenshots land in an ignored one)
    there = {p.name for p in tests.iterdir() if p.is_dir() and any(p.rglob("*.py"))}
    assert named == there


def test_a_stage_takes_built_steps_and_names_the_way_to_build_one():
    from rerankit import Pipeline
    from rerankit.rerankers import ScorerReranker
    from rerankit.scorers import BM25Scorer

    with pytest.raises(TypeError, match=r"rerankit\.load\(name\)"):
        Pipeline([("bm25", 10)])
    stage = Pipeline([(BM25Scorer(), 10)]).stages[0]
    assert isinstance(stage.step, ScorerReranker)


#: imports inside functions that stay there on purpose: each defers a module that imports an
#: optional heavy dependency (fastapi/uvicorn for the service, the provider SDKs), or, in
#: the command line, the library a command runs (numpy, the scorers, the readers, training,
#: the service): building the parser imports none of it, so `rerankit --help`, `rerankit
#: COMMAND --help` and `--version` answer at once (tests/cli/test_quick_help.py)
DEFERRED = {
    ("rerankit.server", "rerankit.server.app"),
    ("rerankit.server.background", "rerankit.server.app"),
    ("rerankit.server", "rerankit.server.connections"),
    ("rerankit.server", "rerankit.server.workers"),
    ("rerankit.server.workers", "rerankit.server.app"),
    ("rerankit.server.workers", "rerankit.server.connections"),
    ("rerankit.llm", "rerankit.llm.gemini"),
    ("rerankit.llm", "rerankit.llm.openai_client"),
    # each command's code, imported by the function that runs it (main.RUNS), and the
    # notes it prints as it runs
    *(
        ("rerankit.cli.main", f"rerankit.cli.{command}")
        for command in (
            "rank",
            "batch",
            "models",
            "check",
            "export",
            "eval",
            "tune",
            "clicks",
            "train",
            "label",
            "precompute",
            "serve",
            "console",
        )
    ),
    ("rerankit.cli", "rerankit.cli.serve"),  # rerankit.cli.serve_settings, when asked for
    # a flag's check in the library's words, when the flag is given; what a command runs
    ("rerankit.cli.args", "rerankit.text.language"),
    ("rerankit.cli.args", "rerankit.eval.metrics"),
    ("rerankit.cli.args", "rerankit.cache"),
    ("rerankit.cli.parsers.rank", "rerankit.scorers.cross_encoder"),
    ("rerankit.cli.parsers.clicks", "rerankit.training.clicks.interleave"),
    ("rerankit.cli.parsers.models", "rerankit.cache.manage"),
    ("rerankit.cli.parsers.train", "rerankit.training.fine_tuning"),
}


def test_imports_inside_functions_only_defer_optional_dependencies():
    import sys

    wrong = []
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        inner = [
            node
            for fn in ast.walk(tree)
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
            for node in ast.walk(fn)
            if isinstance(node, (ast.Import, ast.ImportFrom))
        ]
        for node in inner:
            if isinstance(node, ast.ImportFrom) and node.level:
                continue  # resolved below through _imports
            top = node.names[0].name if isinstance(node, ast.Import) else node.module or ""
            if top.split(".")[0] in sys.stdlib_module_names:
                wrong.append(f"{name}:{node.lineno}: the standard library's {top}")
        lines = {node.lineno for node in inner}
        for module, _, line in _imports(name):
            if line in lines and (name, module) not in DEFERRED:
                wrong.append(f"{name}:{line}: rerankit's own {module}")
    assert wrong == []


def test_no_file_over_450_lines():
    long = {
        str(path.relative_to(SRC)): n
        for path in MODULES.values()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > 450
    }
    assert long == {}


LAYOUT = (SRC.parent / "docs" / "layout.md").read_text(encoding="utf-8")


def test_the_scorers_the_layout_page_shows_as_lexical_ones_are():
    """ "subclass `lexical.LexicalScorer` ..., as `A` and `B` do": A and B do."""
    import rerankit.scorers
    from rerankit.scorers.lexical import LexicalScorer

    said = re.search(
        r"subclass(?:es)?\s+`lexical\.LexicalScorer`[^.]*?,\s+as\s(.*?)\sdo\b", LAYOUT, re.S
    )
    named = re.findall(r"`(\w+)`", said.group(1))
    assert named and all(issubclass(getattr(rerankit.scorers, n), LexicalScorer) for n in named)


def test_the_registry_lines_the_layout_page_shows_are_in_the_registry():
    """Each block shown as "lines of registry.py" is a call registry.py makes (as ruff
    formats it there, the page on one line)."""
    registry = ast.parse(MODULES["rerankit.registry"].read_text(encoding="utf-8"))
    calls = {ast.dump(node) for node in ast.walk(registry) if isinstance(node, ast.Call)}
    blocks = re.findall(
        r"<!-- not run: lines of registry\.py[^>]*-->\s*```python\n(.*?)```", LAYOUT, re.S
    )
    lines = [line.strip() for block in blocks for line in block.splitlines() if line.strip()]
    shown = [ast.parse(line).body[0].value for line in lines]
    assert len(shown) >= 2 and [ast.unparse(c) for c in shown if ast.dump(c) not in calls] == []


def _prints(source: str) -> list[int]:
    """The lines of ``source`` that call ``print`` or write to ``sys.stdout``/``sys.stderr``."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if (isinstance(f, ast.Name) and f.id == "print") or (
            isinstance(f, ast.Attribute)
            and f.attr == "write"
            and isinstance(f.value, ast.Attribute)
            and f.value.attr in ("stdout", "stderr")
        ):
            out.append(node.lineno)
    return out


def test_only_the_command_line_prints():
    """CONTRIBUTING's rule: the library never prints (it logs); the command line does."""
    assert _prints("def f():\n    print('x')\n    sys.stderr.write('y')\n") == [2, 3]
    wrong = [
        f"{name}:{line}"
        for name, path in MODULES.items()
        if _layer_of().get(_place(name)) != "cli"
        for line in _prints(path.read_text(encoding="utf-8"))
    ]
    assert wrong == []
