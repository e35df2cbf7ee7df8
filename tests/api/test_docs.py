"""The README and the documentation pages do not lie: every Python example runs as written,
each in a fresh interpreter (the LLM example's provider addresses pointed at a local server
that speaks their protocols; its ``articles`` given; an example that needs an extra skips
when it is missing); every TOML block parses; every ``rerankit`` command in a shell block
parses with the CLI's own parser; every ``pip install`` names extras that exist and every
``make`` target exists; every relative link points at a file that exists; and the site
builds with ``mkdocs --strict`` (broken links and anchors fail it). A block preceded by
``<!-- not run: why -->`` is skipped, saying why."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rerankit.llm.testing import FakeLLMServer, Reply

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def _blocks(language: str) -> list[tuple[str, int, str]]:
    """(page, index, code) of every ``language`` block not marked ``<!-- not run -->``."""
    out = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        pattern = rf"(<!-- not run: [^>]*-->\s*)?```{language}\n(.*?)```"
        for i, m in enumerate(re.finditer(pattern, text, flags=re.S)):
            if not m.group(1):
                out.append((page.name, i, m.group(2)))
    return out


#: the README's quick tour: test_the_quick_tour_shows_what_it_prints runs it and checks the
#: values its comments show, so it is not run again as an example
TOUR = re.search(
    r"## Quick tour\n\n```python\n(.*?)```", (REPO / "README.md").read_text(), flags=re.S
).group(1)
PYTHON = [(page, i, code) for page, i, code in _blocks("python") if code != TOUR]
BLOCKS = [code for _, _, code in PYTHON]
IDS = [f"{page}-{i}" for page, i, _ in PYTHON]
ARTICLES = [
    {"text": "The central bank cut rates; bank margins narrowed as a result."},
    {"text": "A new stadium opened downtown."},
    {"text": "Lower rates squeeze lending margins at regional banks."},
]


def _needs(block: str) -> list[str]:
    """The optional packages a block needs to run."""
    needs = []
    if re.search(r"EmbeddingScorer|CrossEncoderScorer|CausalLMScorer|rerankit\.rerank\(", block):
        needs.append("sentence_transformers")
    if "GeminiClient" in block:
        needs.append("google.genai")
    if "OpenAIClient" in block:
        needs.append("openai")
    return needs


def _answer(request):
    ids = re.findall(r'"id": "(\d+)"', request.prompt) or ["0"]
    if "window" in request.prompt.lower() or "order" in request.prompt.lower():
        return Reply(text=json.dumps({"order": list(range(len(ids)))}))
    return Reply(text=json.dumps({"scores": [{"id": i, "score": 5} for i in ids]}))


def test_the_pages_have_examples():
    assert len(BLOCKS) >= 5 and len(PYTHON) == len(_blocks("python")) - 1  # and the tour


@pytest.mark.parametrize("index", range(len(BLOCKS)), ids=IDS)
def test_an_example_runs(index, tmp_path):
    block = BLOCKS[index]
    for module in _needs(block):
        if importlib.util.find_spec(module.split(".")[0]) is None:
            pytest.skip(f"the example needs {module}")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    with FakeLLMServer(responder=_answer) as server:
        code = block.replace("GeminiClient()", f"GeminiClient(base_url={server.url!r})")
        code = code.replace('"http://localhost:8000/v1"', repr(server.openai_url))
        prelude = f"articles = {ARTICLES!r}\n" if "articles" in block else ""
        env |= {"GEMINI_API_KEY": "test-key", "OPENAI_API_KEY": "test-key"}
        done = subprocess.run(
            [sys.executable, "-c", prelude + code],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    assert done.returncode == 0, f"example {IDS[index]}:\n{block}\n{done.stderr[-2000:]}"


@pytest.mark.parametrize(("page", "index", "code"), _blocks("toml"), ids=lambda v: str(v)[:20])
def test_a_toml_block_parses(page, index, code, monkeypatch):
    for variable in ("GEMINI_API_KEY", "OPENAI_API_KEY"):  # an LLM judge reads its key
        monkeypatch.setenv(variable, os.environ.get(variable) or "test-key")
    try:
        import tomllib
    except ImportError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    spec = tomllib.loads(code)
    from rerankit.config import build
    from rerankit.errors import MissingDependencyError
    from rerankit.server.settings import ServerSettings

    if {"server", "pipelines"} & set(spec):
        ServerSettings.from_mapping(spec)  # a service's settings file
    elif {"stages", "scorer", "scorers", "reranker", "rule"} & set(spec):
        try:
            build(spec)  # a declared pipeline, built (models load later)
        except MissingDependencyError as exc:
            pytest.skip(f"the pipeline needs an extra: {exc}")


def _commands() -> list[tuple[str, str]]:
    out = []
    for page, _, code in _blocks("bash"):
        for line in code.replace("\\\n", " ").splitlines():
            line = line.split(" #")[0].strip()
            if line:
                out.append((page, line))
    return out


def test_every_command_in_a_shell_block_is_one_that_exists():
    import shlex

    try:
        import tomllib
    except ImportError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    from rerankit.cli import build_parser

    extras = set(
        tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    )
    targets = set(re.findall(r"^([a-z][\w-]*):", (REPO / "Makefile").read_text(), flags=re.M))
    wrong = []
    for page, line in _commands():
        for part in [p.strip() for p in line.split("|")]:
            words = shlex.split(part)
            if words[:1] == ["rerankit"]:
                try:
                    build_parser().parse_args(words[1:])
                except SystemExit:
                    wrong.append(f"{page}: {part}")
            elif words[:1] == ["make"]:
                wrong += [
                    f"{page}: make {t}" for t in words[1:] if "=" not in t and t not in targets
                ]
            elif words[:2] == ["pip", "install"]:
                for named in re.findall(r"(?:rerankit|\.)\[([^\]]+)\]", part):
                    wrong += [f"{page}: extra {x}" for x in named.split(",") if x not in extras]
    assert wrong == []


def test_every_relative_link_points_at_a_file():
    wrong = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (page.parent / target).exists():
                wrong.append(f"{page.name}: {target}")
    assert wrong == []


def test_the_site_builds_strictly(tmp_path):
    pytest.importorskip("mkdocs", reason="needs mkdocs (dev extra)")
    pytest.importorskip("mkdocstrings", reason="needs mkdocstrings (dev extra)")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "s")],
        cwd=REPO,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(REPO / "src")},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    cli = (tmp_path / "s" / "cli" / "index.html").read_text()
    assert "rerankit serve" in cli and "--api-key-env" in cli  # generated from the parser


def test_the_quick_tour_shows_what_it_prints(tmp_path):
    """The values in the README's quick-tour comments are the ones the code gives."""
    pytest.importorskip("sentence_transformers", reason="the tour's default needs 'torch'")
    shown = re.search(r"best\.score\s+# \('(\w+)', (\d+), ([\d.]+)\)", TOUR)
    code = TOUR + "\nprint(best.id, best.rank, f'{best.score:.3f}', result.score_scale)\n"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert done.stdout.split() == [*shown.groups(), "probability"]
