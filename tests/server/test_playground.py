"""The playground page and ``POST /v1/explain``: served by the service itself, and driven
in a real headless Chromium (Debian's ``chromium`` + ``chromedriver``, through Selenium)."""

from __future__ import annotations

import json
import math
import re

import pytest

pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

from playground_page import (  # noqa: E402
    ARTIFACTS,
    AUTH,
    KEY,
    column_indexes,
    open_page,
    rank_and_wait,
    shown,
    wait_for,
)

from rerankit import load  # noqa: E402
from rerankit.server import ServerSettings  # noqa: E402
from rerankit.server.playground import ASSETS  # noqa: E402

FUSED = {
    "name": "fused",
    "stages": [{"scorers": [{"type": "bm25", "weight": 0.6}, {"type": "jaccard", "weight": 0.4}]}],
}
CASCADE = {
    "name": "cascade",
    "stages": [
        {"name": "chooser", "scorer": {"type": "bm25"}, "keep": 3},
        {
            "name": "scorer",
            "normalization": "calibrated",
            "output_calibration": {"slope": 1.5, "intercept": 0.25},
            "scorers": [
                {"type": "coverage", "weight": 0.7, "calibration": {"slope": 4, "intercept": -2}},
                {"type": "jaccard", "weight": 0.3, "calibration": {"slope": 6, "intercept": -1}},
            ],
        },
    ],
}

#: a pipeline that warns of a document without its field
RATED = {"name": "rated", "scorer": {"type": "field", "field": "rating", "missing": 0.0}}


@pytest.fixture(scope="module")
def service(live_server):
    settings = ServerSettings(
        pipelines={"bm25": "bm25", "fused": FUSED, "cascade": CASCADE},
        default="bm25",
        api_keys=[KEY],
    )
    server = live_server(settings)
    yield server
    server.stop()


def sample():
    from rerankit.server.playground import asset

    return json.loads(asset("sample.json"))


# -- without a browser -------------------------------------------------------------------


def test_the_page_and_its_files_are_served_without_a_key_and_load_nothing_from_elsewhere(
    service,
):
    page = httpx.get(f"{service.url}/playground")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    for name, media in ASSETS.items():
        got = httpx.get(f"{service.url}/playground/{name}")
        assert got.status_code == 200 and got.headers["content-type"] == media
        # no URL of another origin anywhere in what the page loads
        assert not re.search(r"(src|href)=\"(https?:)?//", got.text), name
        text = got.text.replace("http://www.w3.org/2000/svg", "")  # a namespace, not a URL
        assert "https://" not in text and "http://" not in text, name
    escape = httpx.get(f"{service.url}/playground/..%2Fapp.py")  # only the listed files
    assert escape.status_code == 404 and "import" not in escape.text
    assert httpx.get(f"{service.url}/playground/other.js").json() == {
        "message": "no playground file 'other.js'",
        "code": "not_found",
    }


def test_explain_answers_what_the_library_explains(service):
    s = sample()
    body = {"model": "fused", "query": s["query"], "documents": s["candidates"]}
    got = httpx.post(f"{service.url}/v1/explain", json=body, headers=AUTH)
    assert got.status_code == 200, got.text
    data = got.json()
    direct = load(FUSED).rerank(s["query"], s["candidates"])
    assert [r["index"] for r in data["results"]] == [r.index for r in direct]
    for api, lib in zip(data["results"], direct.explain(), strict=True):
        assert api["score"] == pytest.approx(lib["score"])
        assert set(api["strategies"]) == set(lib["strategies"])
        for name, part in lib["strategies"].items():
            assert api["strategies"][name]["contribution"] == pytest.approx(part["contribution"])
        assert api["id"] == s["candidates"][api["index"]]["id"]
    assert data["model"] == "fused" and data["score_scale"] == direct.score_scale
    assert {"queue", "inference"} <= set(data["timings"])
    assert data["usage"] == {} and data["degraded"] is False


def _score_from(result):
    """What a reader computes from an explained result: its contributions, combined as it
    says (earlier stages' rows carry no contribution)."""
    terms = [p["contribution"] for p in result["strategies"].values()]
    total = math.fsum(t for t in terms if t is not None)
    if result["score_from_contributions"] == "sigmoid(sum)":
        return 1.0 / (1.0 + math.exp(-total))
    assert result["score_from_contributions"] == "sum"
    return total


@pytest.mark.parametrize("top_n", [None, 3])
def test_explained_contributions_make_the_score_over_http(service, top_n):
    """A cascade's, a fusion's and a single scorer's: the earlier stage's rows are marked
    and left out of the sum."""
    s = sample()
    for model in ("bm25", "fused", "cascade"):
        body = {"model": model, "query": s["query"], "documents": s["candidates"]}
        if top_n:
            body["top_n"] = top_n
        data = httpx.post(f"{service.url}/v1/explain", json=body, headers=AUTH).json()
        for r in data["results"]:
            assert _score_from(r) == pytest.approx(r["score"], abs=1e-9), (model, r)
    chosen = data["results"][:3]
    assert {r["score_from_contributions"] for r in chosen} == {"sigmoid(sum)"}
    for r in chosen:
        row = r["strategies"]["chooser/bm25"]
        assert row["contribution"] is None and row["earlier_stage_contribution"] is not None
        assert r["strategies"]["scorer/(intercept)"]["contribution"] == pytest.approx(0.25)


def test_explain_says_each_warning_once_and_rerank_keeps_coheres_meta_warnings(live_server):
    docs = [{"text": "rated", "rating": 4}, {"text": "unrated"}]
    body = {"model": "rated", "query": "q", "documents": docs}
    service = live_server(
        ServerSettings(pipelines={"rated": RATED}, default="rated", api_keys=[KEY])
    )
    explained = httpx.post(f"{service.url}/v1/explain", json=body, headers=AUTH).json()
    [warning] = explained["warnings"]
    assert "rating" in warning and "warnings" not in explained["meta"]
    assert explained["meta"]["api_version"] == {"version": "2"}  # the rest of Cohere's meta
    reranked = httpx.post(f"{service.url}/v1/rerank", json=body, headers=AUTH).json()
    assert reranked["meta"]["warnings"] == [warning]  # Cohere's answer says it in meta
    service.stop()


def test_explain_needs_the_key_and_names_a_bad_document(service):
    body = {"query": "q", "documents": ["fine", {"id": "x", "body": "no text field"}]}
    assert httpx.post(f"{service.url}/v1/explain", json=body).status_code == 401
    bad = httpx.post(f"{service.url}/v1/explain", json=body, headers=AUTH)
    assert bad.status_code == 422 and "documents.1.text: missing" in bad.json()["message"]
    empty = httpx.post(f"{service.url}/v1/explain", json={**body, "documents": []}, headers=AUTH)
    assert empty.status_code == 422 and "documents" in empty.json()["message"]
    schema = httpx.get(f"{service.url}/openapi.json").json()
    assert "/v1/explain" in schema["paths"]
    assert "200" in schema["paths"]["/v1/explain"]["post"]["responses"]


HEADLINED = [
    {"doc_id": "a", "headline": "Vaccines", "body": "They train B and T cells.", "score": 1},
    {"doc_id": "b", "headline": "Storage", "body": "Vaccines keep cold.", "score": 3},
    {"doc_id": "c", "headline": "Fridges", "body": "Cold rooms for food.", "score": 2},
]
RENAMED = [
    {"id": d["doc_id"], "title": d["headline"], "text": d["body"], "first_stage_score": d["score"]}
    for d in HEADLINED
]


def test_explain_and_v1_rerank_take_the_field_options_as_renaming_the_fields(service):
    """/v1/explain takes rank_fields, title_field and first_stage_field as /v1/rerank does;
    each reads the documents as if their fields had rerankit's names."""
    options = {"rank_fields": ["body"], "title_field": "headline", "first_stage_field": "score"}
    query = {"model": "fused", "query": "vaccines train cells"}

    def post(path, body):
        got = httpx.post(f"{service.url}{path}", json={**query, **body}, headers=AUTH)
        assert got.status_code == 200, got.text
        return [(r["index"], r["relevance_score"]) for r in got.json()["results"]]

    for path in ("/v1/explain", "/v1/rerank"):
        named = post(path, {"documents": HEADLINED, **options})
        assert named == post(path, {"documents": RENAMED})
        assert named != post(path, {"documents": HEADLINED, "rank_fields": ["body"]})
    bad = httpx.post(
        f"{service.url}/v1/explain", json={**query, "documents": HEADLINED}, headers=AUTH
    )
    message = bad.json()["message"]
    assert bad.status_code == 422 and "fields present: 'doc_id', 'headline', 'body'" in message
    assert "or rank_fields naming others (in the playground: the 'Text field(s)' box)" in message


# -- in a real browser -------------------------------------------------------------------


def test_rank_with_two_pipelines_and_read_an_explanation(browser, service):
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    drv = browser
    drv.set_window_size(1280, 800)
    open_page(drv, service)
    drv.find_element("id", "sample").click()
    s = sample()
    # the sample is fetched: wait for it to land in the form
    wait_for(lambda: drv.find_element("id", "query").get_attribute("value") == s["query"])
    Select(drv.find_element("id", "pipeline-a")).select_by_value("bm25")
    Select(drv.find_element("id", "pipeline-b")).select_by_value("fused")
    rank_and_wait(drv, lambda: drv.find_element("id", "query").send_keys(Keys.ENTER))  # Enter
    assert column_indexes(drv, "b")
    api = {
        name: httpx.post(
            f"{service.url}/v1/explain",
            json={"model": name, "query": s["query"], "documents": s["candidates"]},
            headers=AUTH,
        ).json()
        for name in ("bm25", "fused")
    }
    assert column_indexes(drv, "a") == [r["index"] for r in api["bm25"]["results"]]
    assert column_indexes(drv, "b") == [r["index"] for r in api["fused"]["results"]]
    first = sorted(
        range(len(s["candidates"])), key=lambda i: -s["candidates"][i]["first_stage_score"]
    )
    assert column_indexes(drv, "first") == first  # the sample carries first-stage scores
    moves = drv.find_elements("css selector", "svg.moves line")
    assert len(moves) == 2 * len(s["candidates"])  # first stage -> A -> B
    drv.execute_script("document.getElementById('results').scrollIntoView()")
    drv.save_screenshot(str(ARTIFACTS / "playground-compare.png"))

    top = api["fused"]["results"][0]
    drv.find_element("css selector", 'ol[data-column="b"] button.doc').click()
    wait_for(lambda: shown(drv, "details"))
    title = drv.find_element("id", "details-title")
    n = len(s["candidates"])
    # ranks and candidates both counted from 1; the API's index named as such
    assert f"rank 1 of {n} · candidate {top['index'] + 1} of {n} (index {top['index']}" in (
        title.text
    )
    assert drv.switch_to.active_element == title  # focus moves to the explanation
    cells = {
        c.get_attribute("data-strategy"): c.text
        for c in drv.find_elements("css selector", "#details td.contribution")
    }
    assert cells == {
        name: _signed(part["contribution"]) for name, part in top["strategies"].items()
    }
    bars = drv.find_elements("css selector", "#details svg.bar rect")
    assert {b.get_attribute("data-strategy") for b in bars} == set(top["strategies"])
    score = drv.find_element("css selector", "#details dd.detail-score").text
    assert score == f"{top['score']:.4f}"
    # a person can add the shown contributions up to the shown score (rounding aside)
    assert sum(float(v) for v in cells.values()) == pytest.approx(float(score), abs=1e-3)
    drv.execute_script("document.getElementById('details').scrollIntoView()")
    drv.save_screenshot(str(ARTIFACTS / "playground-explanation.png"))

    curl = drv.find_element("id", "curl").get_attribute("textContent")
    # the sample's objects (ids, first-stage scores) go whole to Cohere's v1 shape
    assert "/v1/rerank" in curl and "$RERANKIT_API_KEY" in curl and KEY not in curl
    explain = drv.find_element("id", "curl-explain").get_attribute("textContent")
    assert "/v1/explain" in explain
    toml = drv.find_element("id", "toml").get_attribute("textContent")
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    declared = tomllib.loads(toml)["pipelines"]  # valid TOML, [pipelines] once
    assert set(declared) == {"bm25", "fused"}
    assert declared["bm25"] == {"reranker": "bm25"}  # the form service.md describes
    assert "[pipelines.bm25]" in toml and "\n[pipelines]\n" not in f"\n{toml}"
    assert any(st.get("scorers") for st in declared["fused"]["stages"])
    assert "jaccard" in toml

    # the copied curl asks the Cohere-compatible endpoint for the same order
    body = json.loads(curl.split("-d '", 1)[1].rsplit("'", 1)[0])
    answer = httpx.post(f"{service.url}/v1/rerank", json=body, headers=AUTH).json()
    assert [r["index"] for r in answer["results"]] == column_indexes(drv, "a")


def _signed(x):
    """A contribution as the page writes it: a sign on each side of zero."""
    return f"{x:+.4f}" if x > 0 else f"{x:.4f}"


def test_a_cascade_explanation_shows_signs_and_the_stage_that_chose(browser, service):
    """Negative contributions sit left of the bar's zero line and read negative; the
    stage that chose the candidate is marked in the table and left out of the bar; the
    shown terms make the shown score as the page says."""
    from selenium.webdriver.support.ui import Select

    drv = browser
    drv.set_window_size(1280, 800)
    open_page(drv, service)
    drv.find_element("id", "sample").click()
    s = sample()
    wait_for(lambda: drv.find_element("id", "query").get_attribute("value") == s["query"])
    Select(drv.find_element("id", "pipeline-a")).select_by_value("cascade")
    rank_and_wait(drv, lambda: drv.find_element("id", "rank").click())
    api = httpx.post(
        f"{service.url}/v1/explain",
        json={"model": "cascade", "query": s["query"], "documents": s["candidates"]},
        headers=AUTH,
    ).json()["results"]
    buttons = drv.find_elements("css selector", 'ol[data-column="a"] button.doc')
    checked_negative = False
    for k in range(3):  # the documents the calibrated stage scored
        drv.find_elements("css selector", 'ol[data-column="a"] button.doc')[k].click()
        wait_for(lambda: shown(drv, "details"))
        want = api[k]
        assert f"rank {k + 1} of" in drv.find_element("id", "details-title").text
        cells = {
            c.get_attribute("data-strategy"): c.text
            for c in drv.find_elements("css selector", "#details td.contribution")
        }
        assert cells.pop("chooser/bm25") == "earlier stage"
        assert cells == {
            name: _signed(p["contribution"])
            for name, p in want["strategies"].items()
            if name != "chooser/bm25"
        }
        assert (
            "sigmoid(sum of the contributions)"
            in drv.find_element("css selector", "#details p.how").text
        )
        total = math.fsum(float(v) for v in cells.values())
        score = float(drv.find_element("css selector", "#details dd.detail-score").text)
        assert 1 / (1 + math.exp(-total)) == pytest.approx(score, abs=1e-3)
        zero = float(
            drv.find_element("css selector", "#details svg.bar line.zero").get_attribute("x1")
        )
        rects = drv.find_elements("css selector", "#details svg.bar rect")
        assert {r.get_attribute("data-strategy") for r in rects} == set(cells)
        for rect in rects:
            x, w = float(rect.get_attribute("x")), float(rect.get_attribute("width"))
            value = want["strategies"][rect.get_attribute("data-strategy")]["contribution"]
            assert rect.get_attribute("data-sign") == ("-" if value < 0 else "+")
            if value < 0:
                checked_negative = True
                assert x + w <= zero + 1e-6
            else:
                assert x >= zero - 1e-6
    assert buttons and checked_negative  # the sample gives some signal a negative logit
    drv.execute_script("document.getElementById('details').scrollIntoView()")
    drv.save_screenshot(str(ARTIFACTS / "playground-cascade-explanation.png"))


def test_document_text_is_readable_at_1280_pixels(browser, service):
    drv = browser
    drv.set_window_size(1280, 800)
    open_page(drv, service)
    drv.find_element("id", "sample").click()
    wait_for(lambda: drv.find_element("id", "candidates").get_attribute("value"))
    rank_and_wait(drv, lambda: drv.find_element("id", "rank").click())
    widths = drv.execute_script(
        "return [...document.querySelectorAll('.snippet')]"
        ".map(e => e.getBoundingClientRect().width)"
    )
    assert widths and min(widths) > 200  # about 30 characters, not a dozen


def test_an_open_service_asks_for_no_key(browser, live_server):
    from rerankit.server import ServerSettings

    server = live_server(ServerSettings(pipelines={"bm25": "bm25"}, default="bm25"))
    try:
        browser.get(f"{server.url}/playground")
        wait_for(lambda: len(browser.find_elements("css selector", "#pipeline-a option")) == 1)
        display = browser.execute_script(
            "return getComputedStyle(document.getElementById('key-row')).display"
        )
        assert display == "none"
    finally:
        server.stop()


def test_bad_input_gets_the_api_s_message_inline(browser, service):
    drv = browser
    open_page(drv, service)
    query = drv.find_element("id", "query")
    query.clear()
    query.send_keys("vaccines")
    box = drv.find_element("id", "candidates")
    box.clear()
    drv.find_element("id", "rank").click()
    assert "candidates: paste at least one" in wait_for(
        lambda: shown(drv, "error") and drv.find_element("id", "error").text
    )
    box.send_keys('{"id": "a", "text": "fine"}\n{"id": "b", "body": "no text"}')
    drv.find_element("id", "rank").click()
    message = wait_for(
        lambda: (
            "documents.1.text" in drv.find_element("id", "error").text
            and drv.find_element("id", "error").text
        )
    )
    api = httpx.post(
        f"{service.url}/v1/explain",
        json={
            "model": "bm25",
            "query": "vaccines",
            "documents": [{"id": "a", "text": "fine"}, {"id": "b", "body": "no text"}],
        },
        headers=AUTH,
    ).json()["message"]
    assert message == api
    box.clear()
    box.send_keys('{"id": "a", "text": "fine"}\n{not json')
    drv.find_element("id", "rank").click()
    assert "candidates line 2: not JSON" in wait_for(
        lambda: (
            drv.find_element("id", "error").text.startswith("candidates line")
            and drv.find_element("id", "error").text
        )
    )


def test_the_page_sends_the_field_names_typed_and_draws_your_first_stage(browser, service):
    """JSON Lines with other field names rank once the page is told them, as renaming does."""
    from selenium.webdriver.support.ui import Select

    drv = browser
    open_page(drv, service)
    drv.find_element("id", "query").clear()
    drv.find_element("id", "query").send_keys("vaccines train cells")
    box = drv.find_element("id", "candidates")
    box.clear()
    box.send_keys("\n".join(json.dumps(d) for d in HEADLINED))
    Select(drv.find_element("id", "pipeline-a")).select_by_value("fused")
    Select(drv.find_element("id", "pipeline-b")).select_by_value("")
    drv.find_element("id", "rank").click()
    assert "the 'Text field(s)' box" in wait_for(
        lambda: shown(drv, "error") and drv.find_element("id", "error").text
    )
    for box_id, name in (("text-fields", "body"), ("title-field", "headline")):
        drv.find_element("id", box_id).send_keys(name)
    drv.find_element("id", "first-stage-field").send_keys("score")
    rank_and_wait(drv, lambda: drv.find_element("id", "rank").click())
    assert not shown(drv, "error")
    renamed = httpx.post(
        f"{service.url}/v1/explain",
        json={"model": "fused", "query": "vaccines train cells", "documents": RENAMED},
        headers=AUTH,
    ).json()
    assert column_indexes(drv, "a") == [r["index"] for r in renamed["results"]]
    assert column_indexes(drv, "first") == [1, 2, 0]  # by the 'score' field, best first
    sent = drv.find_element("id", "curl-explain").get_attribute("textContent")
    assert '"rank_fields":["body"],"title_field":"headline","first_stage_field":"score"' in sent


def test_keyboard_order_and_small_screens(browser, service):
    from selenium.webdriver.common.keys import Keys

    drv = browser
    open_page(drv, service)
    drv.find_element("id", "query").click()
    order = []
    for _ in range(8):
        drv.switch_to.active_element.send_keys(Keys.TAB)
        order.append(drv.switch_to.active_element.get_attribute("id"))
    fields = ["text-fields", "title-field", "first-stage-field"]  # your objects' field names
    assert order == ["candidates", *fields, "sample", "pipeline-a", "pipeline-b", "rank"]
    drv.switch_to.active_element.send_keys(Keys.SHIFT, Keys.TAB)
    assert drv.switch_to.active_element.get_attribute("id") == "pipeline-b"
    for width, height in ((1280, 800), (390, 844)):
        drv.set_window_size(width, height)
        drv.find_element("id", "sample").click()
        wait_for(lambda: drv.find_element("id", "candidates").get_attribute("value"))
        rank_and_wait(drv, lambda: drv.find_element("id", "query").send_keys(Keys.ENTER))
        inner = drv.execute_script("return window.innerWidth")
        wide = drv.execute_script("return document.documentElement.scrollWidth")
        assert wide <= inner, f"the page scrolls sideways at {width}x{height}"
        rank = drv.find_element("id", "rank")
        assert rank.is_displayed() and rank.size["width"] > 40
        docs = drv.find_elements("css selector", 'ol[data-column="a"] button.doc')
        assert all(d.size["width"] >= min(300, width - 60) for d in docs)
        drv.save_screenshot(str(ARTIFACTS / f"playground-{width}x{height}.png"))
    drv.set_window_size(1280, 800)


def test_ids_legend_and_what_the_arrows_compare_are_readable_at_1280_pixels(browser, service):
    """Long texts with ids and a first stage, two pipelines: each id is shown whole beside
    its rank (it was squeezed to under 2 px by the text), the legend explains the arrows and
    the "!" flag in visible text, and each column says what its arrows compare against."""
    from selenium.webdriver.support.ui import Select

    drv = browser
    drv.set_window_size(1280, 900)
    open_page(drv, service)
    long = " ".join(["regulation of bone morphogenetic protein signalling in the embryo"] * 12)
    docs = [
        {"id": str(6076903 + i), "text": f"{word} {long}", "first_stage_score": 10 - i}
        for i, word in enumerate(["vaccines", "cells", "train", "immune", "system"])
    ]
    drv.find_element("id", "query").clear()
    drv.find_element("id", "query").send_keys("vaccines train immune cells")
    drv.execute_script(  # typing this much text would take seconds
        "document.getElementById('candidates').value = arguments[0]",
        "\n".join(json.dumps(d) for d in docs),
    )
    Select(drv.find_element("id", "pipeline-a")).select_by_value("bm25")
    Select(drv.find_element("id", "pipeline-b")).select_by_value("fused")
    rank_and_wait(drv, lambda: drv.find_element("id", "rank").click())
    ids = drv.execute_script(
        "return [...document.querySelectorAll('.doc-id')].map(e => [e.textContent, "
        "e.getBoundingClientRect().width, e.scrollWidth, e.clientWidth])"
    )
    assert len(ids) == 15  # 5 documents in 3 columns
    for text, width, scroll, client in ids:
        assert width > 30 and scroll <= client, (text, width)  # the whole id, not a sliver
    legend = drv.find_element("id", "legend")
    assert legend.is_displayed()
    said = legend.text
    assert "! marks a document the pipeline flagged" in said and "truncated" in said
    assert "B's are against A, not against the first stage" in said
    subtitles = drv.execute_script(
        "return [...document.querySelectorAll('.column > p.hint')].map(e => e.textContent)"
    )
    assert subtitles[0] == "by first_stage_score"
    assert subtitles[1].endswith("arrows: vs first stage") and subtitles[2].endswith("arrows: vs A")
    drv.execute_script("document.getElementById('results').scrollIntoView()")
    drv.save_screenshot(str(ARTIFACTS / "playground-ids-and-legend.png"))
