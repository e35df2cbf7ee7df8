"""The playground in a real headless Chromium (Debian's ``chromium`` + ``chromedriver``,
through Selenium): the ``browser`` fixture and what the page tests read from the page."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

KEY = "sekret"
AUTH = {"Authorization": f"Bearer {KEY}"}
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


def _browser_paths():
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return chromium, driver


def chromium():
    """A headless Chromium driver, yielded until the caller is done (conftest's ``browser``
    fixture); a skip with the reason where selenium or chromium is missing."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="needs selenium (dev extra)")
    chromium, driver = _browser_paths()
    if not chromium or not driver:
        pytest.skip("no chromium/chromedriver here: `make browser` installs Debian's chromium")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    options.add_argument("--window-size=1280,800")
    try:
        drv = webdriver.Chrome(service=Service(driver), options=options)
    except Exception as exc:  # installed but broken: a failure, not a skip that hides it
        pytest.fail(f"chromium is installed but did not start: {type(exc).__name__}: {exc}")
    drv.set_window_size(1280, 800)
    ARTIFACTS.mkdir(exist_ok=True)
    yield drv
    drv.quit()


def wait_for(condition, timeout=20.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out waiting for the page")


def shown(drv, element_id):
    return drv.execute_script(f"return !document.getElementById('{element_id}').hidden")


def column_indexes(drv, column):
    """The input indexes of a rendered ranking, best first (read in one script call)."""
    return drv.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map(b => +b.dataset.index)",
        f'ol[data-column="{column}"] button.doc',
    )


def ranked(drv):
    """How many rankings the page has rendered (it counts them on <body>)."""
    return int(drv.execute_script("return +(document.body.dataset.ranked || 0)"))


def rank_and_wait(drv, press):
    before = ranked(drv)
    press()
    wait_for(lambda: ranked(drv) > before)


def open_page(drv, service, pipelines=3):
    drv.get(f"{service.url}/playground")
    wait_for(lambda: shown(drv, "key-row"))  # the service wants a key: the page asks for it
    key = drv.find_element("id", "key")
    key.send_keys(KEY + "\n")
    wait_for(lambda: len(drv.find_elements("css selector", "#pipeline-a option")) == pipelines)
