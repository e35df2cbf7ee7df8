"""docs/compatible.md's first section: `rerankit serve` started as it shows answers TEI's and
Infinity's curl requests with what the page shows under each (an answer's id and creation
time aside, which differ every time)."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest

from served import curl_json, default_service

REPO = Path(__file__).resolve().parents[2]
PAGE = (REPO / "docs" / "compatible.md").read_text(encoding="utf-8")


def _shown() -> list[tuple[str, str]]:
    """(curl command, the answer shown in the comment line under it) of the section's
    blocks, in order."""
    section = PAGE[: PAGE.index("\n## Coming from sentence-transformers")]
    pairs = []
    for block in re.findall(r"```bash\n(.*?)```", section, flags=re.S):
        lines = block.replace("\\\n", " ").splitlines()
        for line, under in itertools.pairwise(lines):
            if line.startswith("curl "):
                assert under.startswith("# "), f"no answer shown under {line}"
                pairs.append((line, under[2:]))
    return pairs


@pytest.fixture(scope="module")
def service_url():
    """`rerankit serve` as the page starts it (open, the default pipelines), on a free port."""
    pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
    pytest.importorskip("sentence_transformers", reason="the default needs the 'torch' extra")
    with default_service() as url:
        yield url


def _same(got, shown, path="answer"):
    """Whether ``got`` is the answer ``shown``: scores to 1e-4, id and created aside."""
    if isinstance(shown, dict):
        assert set(got) == set(shown), f"{path}: {sorted(got)} != {sorted(shown)}"
        for key in shown.keys() - {"id", "created"}:
            _same(got[key], shown[key], f"{path}.{key}")
    elif isinstance(shown, list):
        assert len(got) == len(shown), path
        for i, (g, s) in enumerate(zip(got, shown, strict=True)):
            _same(g, s, f"{path}[{i}]")
    elif isinstance(shown, float):
        assert got == pytest.approx(shown, abs=1e-4), path
    else:
        assert got == shown, path


def test_tei_and_infinity_requests_get_the_answers_shown(service_url):
    pairs = _shown()
    assert len(pairs) == 2
    tei, infinity = pairs
    assert '"texts"' in tei[0] and '"documents"' in infinity[0]
    for line, shown in pairs:
        _same(curl_json(line, service_url), json.loads(shown))


def test_raw_scores_on_the_default_are_its_probabilities_not_logits(service_url):
    """The table's TEI and Infinity rows: the score is the pipeline's, and ``raw_scores``
    gives the pipeline's own scale, which for the default hybrid is the same probability."""
    import httpx

    texts = ["Vaccine storage needs fridges.", "A vaccine trains B and T cells."]
    query = "how do vaccines work"
    tei = {"query": query, "texts": texts}
    infinity = {"query": query, "documents": texts}
    for body, key in ((tei, None), (infinity, "results")):
        answers = []
        for raw in (False, True):
            got = httpx.post(f"{service_url}/rerank", json={**body, "raw_scores": raw}, timeout=60)
            assert got.status_code == 200, got.text
            rows = got.json()[key] if key else got.json()
            answers.append({r["index"]: r.get("score", r.get("relevance_score")) for r in rows})
        assert answers[0] == pytest.approx(answers[1])
        assert all(0 < s < 1 for s in answers[1].values())


def test_the_readme_sends_tei_and_infinity_users_to_the_curl_examples():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    recipe = readme[readme.index("### Call the service") : readme.index("### Evaluate")]
    line = next(x for x in recipe.splitlines() if "TEI's and Infinity's" in x)
    assert "(docs/compatible.md)" in line
