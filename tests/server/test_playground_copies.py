"""What the playground hands over and shows beside the rankings: the copied curl ranks as
the page did (titles, ids and field names included), the copied TOML's pipeline file is
absolute, every column reads a document the same way with its id, the page asks for no
favicon, and ``/v1/models`` names the endpoints a pipeline answers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

from playground_page import AUTH, KEY, column_indexes, open_page, rank_and_wait  # noqa: E402

from rerankit.server import ServerSettings  # noqa: E402

# the titles decide the order: without them 'b' would come first
TITLED = [
    {
        "id": "a",
        "title": "Vaccines and the immune system",
        "text": "It trains cells.",
        "first_stage_score": 1.0,
    },
    {
        "id": "b",
        "title": "Storage",
        "text": "Vaccines keep cold in fridges.",
        "first_stage_score": 2.0,
    },
    {"id": "c", "title": "Fridges", "text": "Cold rooms for food.", "first_stage_score": 3.0},
]
QUERY = "vaccines immune system"


def _settings(folder: Path, line_form: bool) -> Path:
    """A settings file whose `fused` pipeline is a pipeline file beside it, named by a
    relative path (in the `[pipelines]` line form, or as a `[pipelines.fused]` table)."""
    (folder / "fused.toml").write_text(
        '[[stages]]\nscorers = [{ type = "bm25", weight = 0.6 }, '
        '{ type = "jaccard", weight = 0.4 }]\n'
    )
    pipelines = (
        '[pipelines]\nbm25 = "bm25"\nfused = "fused.toml"\n'
        if line_form
        else '[pipelines.bm25]\nreranker = "bm25"\n\n[pipelines.fused]\nreranker = "fused.toml"\n'
    )
    path = folder / "service.toml"
    path.write_text(f'[server]\ndefault = "bm25"\napi_keys = ["{KEY}"]\n\n{pipelines}')
    return path


@pytest.fixture(scope="module")
def service(live_server, tmp_path_factory):
    folder = tmp_path_factory.mktemp("settings")
    server = live_server(ServerSettings.from_file(_settings(folder, line_form=False)))
    yield server
    server.stop()


def _paste(drv, query, docs, a, b=""):
    from selenium.webdriver.support.ui import Select

    drv.find_element("id", "query").clear()
    drv.find_element("id", "query").send_keys(query)
    box = drv.find_element("id", "candidates")
    box.clear()
    box.send_keys("\n".join(json.dumps(d) for d in docs))
    Select(drv.find_element("id", "pipeline-a")).select_by_value(a)
    Select(drv.find_element("id", "pipeline-b")).select_by_value(b)
    rank_and_wait(drv, lambda: drv.find_element("id", "rank").click())


def _copied(drv, element_id):
    """The copied curl's path and body, as a shell would send them."""
    text = drv.find_element("id", element_id).get_attribute("textContent")
    path = re.match(r"curl -s http://[^/\s]+(/\S+)", text).group(1)
    return path, json.loads(text.split("-d '", 1)[1].rsplit("'", 1)[0])


@pytest.mark.parametrize("model", ["bm25", "fused"])
def test_the_copied_curl_ranks_as_the_page_did(browser, service, model):
    """Titled objects: the copied request sends them whole (v1), and its answer has the
    page's order and the page's scores."""
    drv = browser
    open_page(drv, service, 2)
    _paste(drv, QUERY, TITLED, model)
    page = httpx.post(  # what the page asked for (its explanation)
        f"{service.url}/v1/explain",
        json={"model": model, "query": QUERY, "documents": TITLED},
        headers=AUTH,
    ).json()["results"]
    assert column_indexes(drv, "a") == [r["index"] for r in page] == [0, 1, 2]
    path, body = _copied(drv, "curl")
    answer = httpx.post(f"{service.url}{path}", json=body, headers=AUTH)
    assert answer.status_code == 200, answer.text
    got = [(r["index"], r["relevance_score"]) for r in answer.json()["results"]]
    assert got == [(r["index"], pytest.approx(r["relevance_score"])) for r in page]
    assert "Cohere v1" in drv.find_element("id", "curl-title").text
    # plain texts keep the Cohere v2 request, which then ranks as the page does too
    _paste(drv, QUERY, [d["text"] for d in TITLED], model)
    path, body = _copied(drv, "curl")
    assert path == "/v2/rerank" and "Cohere v2" in drv.find_element("id", "curl-title").text
    answer = httpx.post(f"{service.url}{path}", json=body, headers=AUTH).json()
    assert [r["index"] for r in answer["results"]] == column_indexes(drv, "a")


def test_the_copied_toml_names_the_pipeline_file_absolutely(browser, live_server, tmp_path):
    """service.md: the path as the service resolved it (here from the `[pipelines]` line
    form, started from another folder), so the copied TOML works from anywhere."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    (tmp_path / "here").mkdir()
    server = live_server(ServerSettings.from_file(_settings(tmp_path / "here", line_form=True)))
    try:
        drv = browser
        open_page(drv, server, 2)
        _paste(drv, QUERY, TITLED, "bm25", "fused")
        copied = drv.find_element("id", "toml").get_attribute("textContent")
    finally:
        server.stop()
    declared = tomllib.loads(copied)["pipelines"]
    path = Path(declared["fused"]["reranker"])
    assert path.is_absolute() and path == tmp_path / "here" / "fused.toml"
    assert declared["bm25"] == {"reranker": "bm25"}
    (tmp_path / "service.toml").write_text(copied)  # elsewhere: the copy names the same file
    assert ServerSettings.from_file(tmp_path / "service.toml").pipelines["fused"] == {
        "reranker": str(path)
    }


def test_every_column_reads_a_document_alike_with_its_id(browser, service):
    drv = browser
    open_page(drv, service, 2)
    _paste(drv, QUERY, TITLED, "bm25", "fused")

    def cells(column, part):
        return drv.execute_script(
            "return Object.fromEntries([...document.querySelectorAll(arguments[0])]"
            ".map(b => [b.dataset.index, (b.querySelector(arguments[1]) || {}).textContent]))",
            f'ol[data-column="{column}"] button.doc',
            part,
        )

    first, a, b = (cells(c, ".snippet") for c in ("first", "a", "b"))
    assert first == a == b and first["0"].startswith("Vaccines and the immune system")
    ids = {str(i): d["id"] for i, d in enumerate(TITLED)}
    assert all(cells(c, ".doc-id") == ids for c in ("first", "a", "b"))


def test_the_page_asks_for_no_favicon(service):
    page = httpx.get(f"{service.url}/playground").text
    assert '<link rel="icon" href="data:,">' in page  # no request, so no 404 in the console


def test_models_lists_the_endpoints_each_pipeline_answers(service):
    """Each listed endpoint answers for each listed name (Cohere's kinds: `rerank`; and
    rerankit's `explain`)."""
    models = httpx.get(f"{service.url}/v1/models", headers=AUTH).json()["models"]
    paths = {"rerank": ["/v1/rerank", "/v2/rerank"], "explain": ["/v1/explain"]}
    assert models and all(m["endpoints"] == ["rerank", "explain"] for m in models)
    for m in models[:3]:
        for endpoint in m["endpoints"]:
            for path in paths[endpoint]:
                body = {"model": m["name"], "query": QUERY, "documents": ["a", "vaccines"]}
                got = httpx.post(f"{service.url}{path}", json=body, headers=AUTH)
                assert got.status_code == 200, (m["name"], path, got.text)
