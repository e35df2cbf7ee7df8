"""The README and the documentation pages do not lie: every Python example runs as written,
each in a fresh interpreter (the LLM example's provider addresses pointed at a local server
that speaks their protocols; its ``articles`` given; an example that needs an extra skips
when it is missing); every TOML example loads, with ``rerankit.load`` where it is a pipeline
and as ``rerankit serve --settings`` reads it where it is service settings (the example
folders' pipeline files too); every ``rerankit`` command in a shell block parses with the
CLI's own parser, and every ``rerankit`` command and flag anywhere on a page, in a block or
in running text, is one the parser lists in ``--help`` (an earlier spelling that still
works is not shown, except in the CLI page's table of them); every registered name a page
uses (``-r``, ``--rerankers``, ``reranker=``, a pipeline's ``type``) is one ``rerankit
rerankers --all`` lists; every ``pip install`` names extras that exist and every ``make``
target exists; every relative link points at a file that exists; and the site builds with
``mkdocs --strict`` (broken links and anchors fail it). A block preceded by
``<!-- not run: why -->`` is skipped, saying why (``test_recipes.py`` runs the README's
recipes that need a model folder or a running service)."""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from rerankit.llm.testing import FakeLLMServer, Reply

REPO = Path(__file__).resolve().parents[2]
PAGES = [
    REPO / "README.md",
    REPO / "CONTRIBUTING.md",
    *sorted((REPO / "docs").glob("*.md")),
    *sorted((REPO / "docs" / "design").glob("*.md")),
]


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
    if "langchain_core" in block:
        needs.append("langchain_core")
    if "llama_index" in block:
        needs.append("llama_index")
    if "import pandas" in block:
        needs.append("pandas")
    if "from fastapi" in block:
        needs.append("fastapi")
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


TOMLS = [(page, code) for page, _, code in _blocks("toml")] + [
    (str(path.relative_to(REPO)), path.read_text(encoding="utf-8"))
    for path in sorted((REPO / "examples").rglob("*.toml"))
]


@pytest.mark.parametrize(
    ("page", "code"), TOMLS, ids=[f"{p}-{i}" for i, (p, _) in enumerate(TOMLS)]
)
def test_a_toml_example_loads(page, code, monkeypatch, tmp_path):
    """A pipeline loads with ``rerankit.load`` (models load on first use, so no model is
    fetched); service settings load as ``rerankit serve --settings`` reads them (with
    ``--reranker FILE`` when their first line says they are served with one)."""
    for variable in ("GEMINI_API_KEY", "OPENAI_API_KEY"):  # an LLM judge reads its key
        monkeypatch.setenv(variable, os.environ.get(variable) or "test-key")
    try:
        import tomllib
    except ImportError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    spec = tomllib.loads(code)
    path = tmp_path / "example.toml"
    path.write_text(code, encoding="utf-8")
    import rerankit
    from rerankit.errors import MissingDependencyError

    flags = ["serve", "--settings", str(path)]
    paired = re.match(r"#.*--reranker (\S+\.toml)", code)  # settings served with a file
    if paired:  # (that file: a stand-in declaring its name, as tune's do)
        stand_in = tmp_path / paired.group(1)
        stand_in.write_text(f'name = "{stand_in.stem}"\nreranker = "bm25"\n', encoding="utf-8")
        flags += ["--reranker", str(stand_in)]
    try:
        if {"server", "pipelines"} & set(spec):
            from rerankit.cli import build_parser, serve_settings

            settings = serve_settings(build_parser().parse_args(flags))
            assert settings.default in settings.pipelines
        else:
            assert {"stages", "scorer", "scorers", "reranker", "rule"} & set(spec), (
                f"{page}: a TOML example that is neither a pipeline nor service settings"
            )
            assert rerankit.load(path).scorers() is not None
    except MissingDependencyError as exc:
        pytest.skip(f"the example needs an extra: {exc}")


def _commands() -> list[tuple[str, str]]:
    out = []
    for page, _, code in _blocks("bash"):
        for line in code.replace("\\\n", " ").splitlines():
            line = line.split(" #")[0].strip()
            if line and not line.startswith("#"):  # a comment line (an answer shown) is no command
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
            exists = (page.parent / target).exists()  # as read in the repository
            if not exists:
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
    assert "make test-core" in (tmp_path / "s" / "contributing" / "index.html").read_text()


def test_the_quick_tour_shows_what_it_prints(tmp_path):
    """The values in the README's quick-tour comments are the ones the code gives."""
    pytest.importorskip("sentence_transformers", reason="the tour's default needs 'torch'")
    line = re.search(r"^(best\.id, .*?)\s+# (\('\w+', \d+, [\d.]+\))", TOUR, flags=re.M)
    expression, shown = line.groups()  # the line prints what its comment shows, as written
    code = TOUR + f"\nprint(repr(({expression})), result.score_scale)\n"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert done.stdout.strip() == f"{shown} probability"


# --- every command, flag and registered name a page shows ------------------------------------


def _prose(text: str) -> str:
    """A page without its fenced blocks."""
    return re.sub(r"```.*?```", "", text, flags=re.S)


def _spans(page: Path) -> list[tuple[str, str]]:
    """(the line it starts on, text) of every inline code span outside fenced blocks."""
    text = _prose(page.read_text(encoding="utf-8"))
    out = []
    for m in re.finditer(r"`([^`]+)`", text):
        line = text[: m.start()].rsplit("\n", 1)[-1] + text[m.start() :].split("\n", 1)[0]
        out.append((line, " ".join(m.group(1).split())))
    return out


def _parsers() -> tuple[dict[str, set[str]], set[str]]:
    """Each command's option strings as ``--help`` lists them (earlier spellings, hidden
    there, left out), and the top-level ones."""
    from rerankit.cli import build_parser

    parser = build_parser()
    visible = lambda p: {  # noqa: E731
        s for a in p._actions if a.help != argparse.SUPPRESS for s in a.option_strings
    }
    commands = {}
    for action in parser._subparsers._group_actions:
        for name, sub in action.choices.items():
            commands[name] = visible(sub)
    return commands, visible(parser)


def _check_command(words: list[str], commands: dict, top: set[str]) -> list[str]:
    """What is wrong with ``rerankit WORDS``: an unknown command, or a flag its ``--help``
    does not list."""
    words = [w.strip("[]") for w in words if w.strip("[]")]
    rest = words[1:]
    while rest and rest[0].startswith("-"):
        if rest[0] not in top:
            return [f"option {rest[0]}"]
        rest = rest[1:]
    if not rest or rest[0] == "...":
        return []
    command, wrong = rest[0], []
    if command.isupper():  # a placeholder: rerankit COMMAND --help
        return []
    if command not in commands:
        return [f"command {command}"]
    for word in rest[1:]:
        flag = word.split("=")[0]
        if re.match(r"^--?[A-Za-z]", flag) and flag not in commands[command]:
            wrong.append(f"{command} {flag}")
    return wrong


def _command_lines() -> list[tuple[str, str]]:
    """(page, ``rerankit ...`` line) from every shell block and inline span of every page;
    the CLI page's table of earlier spellings is what it is about, so it is left out."""
    out = [
        (page, part.strip())
        for page, line in _commands()
        for part in line.split("|")
        if part.strip().startswith("rerankit ")
    ]
    for page in PAGES:
        for line, span in _spans(page):
            if page.name == "cli.md" and line.startswith("| `"):
                continue  # the table of earlier spellings
            for part in re.split(r"[|;]", span):
                if part.strip().startswith("rerankit "):
                    out.append((page.name, part.strip()))
    return out


def test_every_command_and_flag_on_a_page_is_one_help_lists():
    commands, top = _parsers()
    lines = _command_lines()
    assert len(lines) > 60  # the check reads running text as well as blocks
    wrong = []
    for page, line in lines:
        try:
            words = shlex.split(line)
        except ValueError:
            words = line.split()
        wrong += [f"{page}: {line!r}: {w}" for w in _check_command(words, commands, top)]
    assert wrong == []


USER_PAGES = [p for p in PAGES if p.parent.name != "design" and p.name != "measured.md"]


def test_every_flag_named_alone_on_a_user_page_exists():
    """A flag named in running text (`--texts-only`) is one some command's ``--help`` lists
    (the benchmark scripts' flags appear only on Measured and the design notes; tables name
    earlier spellings and other tools' flags beside ours)."""
    commands, top = _parsers()
    known = top.union(*commands.values()) | {"--help"}
    wrong = []
    for page in USER_PAGES:
        for line, span in _spans(page):
            if line.startswith("|"):
                continue
            first = span.split()[0]
            if re.match(r"^--[a-z]", first) and first.split("=")[0] not in known:
                wrong.append(f"{page.name}: {span}")
    assert wrong == []


def _registered() -> dict[str, set[str]]:
    """The names ``rerankit rerankers --all`` prints, by kind (``reranker`` for the plain
    ones), read from its output."""
    from rerankit.cli import main

    done = subprocess.run(
        [sys.executable, "-m", "rerankit", "rerankers", "--all"],
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        capture_output=True,
        text=True,
        check=True,
    )
    assert main is not None
    names: dict[str, set[str]] = {}
    for line in done.stdout.partition("\n\n")[0].splitlines()[1:]:
        name = line.split()[0]
        kind, _, bare = name.rpartition(":")
        names.setdefault(kind or "reranker", set()).add(bare)
    return names


def _is_name(value: str) -> bool:
    """Whether ``value`` names a registered thing (not a file, a model id or a placeholder)."""
    return bool(re.fullmatch(r"[a-z][a-z0-9_-]*", value)) and not re.search(
        r"\.(toml|ya?ml|json)$", value
    )


PLACEHOLDERS = {"name", "my-ranker", "mine"}


def _named() -> list[tuple[str, str, str]]:
    """(page, kind, name) for every registered name a page uses: ``-r``/``--reranker``,
    ``--rerankers``, ``reranker=`` in Python, and a TOML pipeline's ``reranker``,
    ``type`` and ``provider``."""
    out = []
    for page, line in _command_lines():
        words = line.split()
        for flag, value in itertools.pairwise(words):
            if flag in ("-r", "--reranker"):
                out.append((page, "reranker", value))
            elif flag == "--rerankers":
                out += [(page, "reranker", v) for v in value.split(",")]
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        out += [(page.name, "reranker", v) for v in re.findall(r'reranker="([^"]+)"', text)]
        for block in re.findall(r"```toml\n(.*?)```", text, flags=re.S) + re.findall(
            r"`([^`\n]*type = [^`\n]*)`", text
        ):
            out += [(page.name, "reranker", v) for v in re.findall(r'reranker = "([^"]+)"', block)]
            out += [(page.name, "type", v) for v in re.findall(r'type = "([^"]+)"', block)]
            out += [
                (page.name, "llm_client", v) for v in re.findall(r'provider = "([^"]+)"', block)
            ]
    return [(p, k, v) for p, k, v in out if _is_name(v) and v not in PLACEHOLDERS]


def test_every_registered_name_a_page_uses_is_listed_by_rerankit_rerankers():
    registered = _registered()
    types = registered["reranker"] | registered["scorer"] | registered["rule"]
    allowed = {
        "reranker": registered["reranker"],
        "type": types,
        "llm_client": registered["llm_client"],
    }
    named = _named()
    assert len(named) > 20
    spelled = lambda v: {v, v.replace("-", "_"), v.replace("_", "-")}  # noqa: E731
    # a name the page registers itself in an example (`register("rule", "mine", ...)`,
    # `register_reranker("mine", ...)`)
    own = {
        (page.name, name)
        for page in PAGES
        for name in re.findall(r'register(?:\(\s*"\w+",|_reranker\()\s*"([^"]+)"', page.read_text())
    }
    wrong = [
        f"{p}: {k} {v!r}" for p, k, v in named if not spelled(v) & allowed[k] and (p, v) not in own
    ]
    assert wrong == []
    assert {"cross-encoder", "causal-lm", "hybrid"} <= registered["reranker"]


def test_the_shown_explain_output_is_the_commands(tmp_path):
    """The pipeline page's ``--explain`` output is what its command prints (numbers to
    within 1e-3, since the embedding's last digits may differ between CPUs)."""
    pytest.importorskip("sentence_transformers", reason="the pipeline needs the 'torch' extra")
    text = (REPO / "docs" / "pipelines.md").read_text(encoding="utf-8")
    command, shown = re.search(
        r"```text\n\$ (rerankit rank .*?--explain -k 3)\n(.*?)```", text, flags=re.S
    ).groups()
    words = shlex.split(command.replace("\\\n", " "))
    done = subprocess.run(
        [sys.executable, "-m", "rerankit", *words[1:]],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    number = r"-?\d+\.\d+"
    assert re.sub(number, "N", done.stdout) == re.sub(number, "N", shown)
    got = [float(x) for x in re.findall(number, done.stdout)]
    assert got == pytest.approx([float(x) for x in re.findall(number, shown)], abs=1e-3)


def test_a_figure_the_pages_repeat_is_one_figure():
    """The torch-free install's size is Measured's figure wherever a page gives it, and
    ``max_documents`` is the code's default wherever a page gives that."""
    from rerankit.server import ServerSettings

    pages = {p.name: " ".join(p.read_text(encoding="utf-8").split()) for p in PAGES}
    measured = re.search(r"\| `rerankit\[onnx,server\]` \| ([\d,]+) MB \|", pages["measured.md"])
    sizes = {
        (page, size)
        for page, text in pages.items()
        for size in re.findall(r"(\d[\d,]*) MB (?:install|against)", text)
    }
    assert {page for page, _ in sizes} >= {"choosing.md", "scorers.md", "service.md"}
    assert {size for _, size in sizes} == {measured.group(1)}, sizes
    limits = [
        (page, int(n))
        for page, text in pages.items()
        for n in re.findall(r"max_documents`?[ ,(=]{1,3}(\d+)", text)
    ]
    assert len(limits) >= 3
    assert {n for _, n in limits} == {ServerSettings().max_documents}, limits
