"""The page in a real headless Chromium (Debian's ``chromium`` + ``chromium-driver``, driven by Selenium).

The test loads the page from a real ``diachron serve`` on the real stock index, asks a question, and checks
what a person sees: the window chip ("Reading this as: 1 Sep 2010 – 31 Aug 2012 (between)"), the citation
cards (Answer for / Evidence / Valid / Recorded / Status / Time source, human-readable dates), the timeline
(one bar per evidence interval in view, the window band), the trace; then edits the window and re-runs,
and asks an empty question (a one-line error on the page). A screenshot is saved in the test's tmp dir.
"""

from __future__ import annotations

from pathlib import Path

import pytest

CHROMIUM, DRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
MSFT = "How did Microsoft Corp. (MSFT) stock perform between September 2010 and August 2012?"
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
    "--window-size=1200,2200",
]

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if not (CHROMIUM.is_file() and DRIVER.is_file()):
        pytest.fail(
            "chromium and chromium-driver are missing: run scripts/install.sh (apt-get install chromium chromium-driver)"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in [*FLAGS, f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=str(DRIVER)), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def page_url(stock_db):
    from served import serving

    from diachron.service import ServiceConfig

    with serving(ServiceConfig(db=stock_db[0], timeout_s=120)) as url:
        yield url


def _ask(browser, question: str, now: str = "2026-01-01T00:00:00Z") -> None:
    from selenium.webdriver.common.by import By

    box = browser.find_element(By.ID, "question")
    box.clear()
    box.send_keys(question)
    clock = browser.find_element(By.ID, "now")
    clock.clear()
    clock.send_keys(now)
    k = browser.find_element(By.ID, "k")
    k.clear()
    k.send_keys("5")
    browser.find_element(By.ID, "go").click()


def _wait(browser, condition, timeout: float = 120):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, timeout, poll_frequency=0.2).until(condition)


def test_the_page_shows_the_time_of_the_answer(browser, page_url, tmp_path):
    from selenium.webdriver.common.by import By

    browser.get(page_url + "/")
    _ask(browser, MSFT)
    _wait(browser, lambda b: len(b.find_elements(By.CSS_SELECTOR, "#cards article.card")) == 5)
    assert browser.find_element(By.ID, "window-chip").text == "1 Sep 2010 – 31 Aug 2012"
    assert browser.find_element(By.ID, "relation").text == "(between)"

    cards = browser.find_elements(By.CSS_SELECTOR, "#cards article.card")
    labels = [dt.text for dt in cards[0].find_elements(By.TAG_NAME, "dt")]
    assert labels == ["Answer for", "Evidence", "Valid", "Recorded", "Status", "Time source", "Score"]
    for card in cards:
        assert card.get_attribute("data-doc").startswith("stock-MSFT-")
        values = dict(zip(labels, (dd.text for dd in card.find_elements(By.TAG_NAME, "dd")), strict=True))
        # each MSFT summary answers for its own month, written as people write it ("Feb 2011"), not ISO
        _, _, year, month = card.get_attribute("data-doc").split("-")
        assert values["Answer for"].split(",")[0] == f"{MONTHS[int(month) - 1]} {year}"
        assert "T00:00" not in values["Answer for"]
        assert values["Valid"] == "not versioned" and values["Status"] == "current"
        assert values["Time source"] == "event" and "UTC" in values["Recorded"]

    published = [c.find_element(By.CLASS_NAME, "published").text for c in cards]
    assert all(p.startswith("published ") for p in published)
    bars = browser.find_elements(By.CSS_SELECTOR, "#timeline rect.bar")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#timeline rect.window")) == 1
    assert len(bars) >= 5  # at least each card's own month inside the window
    _check_axis(browser)
    trace = browser.find_element(By.ID, "trace-box")
    browser.execute_script("arguments[0].open = true", trace)
    assert "candidates after the time filter" in browser.find_element(By.ID, "trace").text
    shot = tmp_path / "page.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    print(f"screenshot: {shot}")

    # edit the reading and re-run: a one-quarter window
    browser.find_element(By.ID, "edit-window").click()
    start, end = browser.find_element(By.ID, "w-start"), browser.find_element(By.ID, "w-end")
    browser.execute_script("arguments[0].value = '2011-03-01'; arguments[1].value = '2011-05-31'", start, end)
    browser.find_element(By.ID, "rerun").click()
    _wait(browser, lambda b: b.find_element(By.ID, "window-chip").text == "1 Mar 2011 – 31 May 2011")
    docs = {
        c.get_attribute("data-doc") for c in browser.find_elements(By.CSS_SELECTOR, "#cards article.card")
    }
    assert {"stock-MSFT-2011-03", "stock-MSFT-2011-04", "stock-MSFT-2011-05"} <= docs


def _check_axis(browser) -> None:
    """Tick labels name the instant under them, at the axis' own granularity (months on a two-year axis, no
    hours); a day on this axis (a year-to-date base, a prior close) is a faint dot, not a sliver bar that
    stacks into a dashed line. The axis scale comes from the window band: [1 Sep 2010, 1 Sep 2012)."""
    from datetime import UTC, datetime

    from selenium.webdriver.common.by import By

    band = browser.find_element(By.CSS_SELECTOR, "#timeline rect.window")
    x0, width = float(band.get_attribute("x")), float(band.get_attribute("width"))
    lo, hi = datetime(2010, 9, 1, tzinfo=UTC).timestamp(), datetime(2012, 9, 1, tzinfo=UTC).timestamp()
    ticks = browser.find_elements(By.CSS_SELECTOR, "#timeline text.tick")
    labels = [t.text for t in ticks]
    assert 3 <= len(labels) <= 10 and len(set(labels)) == len(labels), labels
    for tick, label in zip(ticks, labels, strict=True):
        month, year = label.split()
        at = datetime(int(year), MONTHS.index(month) + 1, 1, tzinfo=UTC).timestamp()
        assert abs(float(tick.get_attribute("x")) - (x0 + (at - lo) / (hi - lo) * width)) < 1.0, label
    widths = [
        float(b.get_attribute("width")) for b in browser.find_elements(By.CSS_SELECTOR, "#timeline rect.bar")
    ]
    assert min(widths) >= 3
    assert browser.find_elements(
        By.CSS_SELECTOR, "#timeline circle.point"
    )  # each summary's Dec 2010 YTD base


def test_an_empty_question_is_a_one_line_error_on_the_page(browser, page_url):
    from selenium.webdriver.common.by import By

    browser.get(page_url + "/")
    _ask(browser, "   ")
    _wait(browser, lambda b: "Cannot answer" in b.find_element(By.ID, "status").text)
    assert "empty" in browser.find_element(By.ID, "status").text
    assert not browser.find_elements(By.CSS_SELECTOR, "#cards article.card")
