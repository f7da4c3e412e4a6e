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
            "chromium and chromium-driver are missing: run scripts/install.sh "
            "(apt-get install chromium chromium-driver)"
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


def test_the_answer_panel_cites_the_cards(browser, page_url):
    """The answer panel: its scope in words, the deterministic answer's first paragraph, and one [n] link per
    card, each pointing at its card (#card-n)."""
    from selenium.webdriver.common.by import By

    browser.get(page_url + "/")
    _ask(browser, MSFT)
    _wait(browser, lambda b: len(b.find_elements(By.CSS_SELECTOR, "#cards article.card")) == 5)
    _wait(browser, lambda b: b.find_element(By.ID, "answer-box").is_displayed())
    assert browser.find_element(By.ID, "answer-scope").text == "between Sep 2010 and Aug 2012"
    assert browser.find_element(By.ID, "answer-source").text == "written from the evidence, no model"
    paragraphs = [p.text for p in browser.find_elements(By.CSS_SELECTOR, "#answer-text p")]
    assert paragraphs[0] == "Between Sep 2010 and Aug 2012, the evidence says:"
    links = browser.find_elements(By.CSS_SELECTOR, "#answer-text a.cite")
    assert sorted({a.text for a in links}) == [f"[{n}]" for n in range(1, 6)]
    for a in links:
        n = a.text.strip("[]")
        assert a.get_attribute("href").endswith(f"#card-{n}")
        assert browser.find_element(By.ID, f"card-{n}").tag_name == "article"
    assert not browser.find_element(By.ID, "answer-reason").is_displayed()


def test_a_point_question_draws_every_card_s_bars(browser, page_url):
    """ "Latest … as of 20 March 2011" is a point question (current on a day): the axis holds every card's
    month, so each card has a bar (before, only the cards overlapping the day's band showed)."""
    from selenium.webdriver.common.by import By

    browser.get(page_url + "/")
    _ask(browser, "What was the latest IBM stock summary as of 20 March 2011?")
    _wait(browser, lambda b: len(b.find_elements(By.CSS_SELECTOR, "#cards article.card")) == 5)
    assert browser.find_element(By.ID, "relation").text == "(current)"
    assert len(browser.find_elements(By.CSS_SELECTOR, "#timeline rect.window")) == 1
    titles = [
        b.find_element(By.TAG_NAME, "title").get_attribute("textContent")
        for b in browser.find_elements(By.CSS_SELECTOR, "#timeline rect.bar")
    ]
    drawn = {t.split("]")[0] + "]" for t in titles}
    assert drawn == {f"[{n}]" for n in range(1, 6)}, titles
    assert browser.find_element(By.ID, "answer-scope").text == "on 20 Mar 2011"


@pytest.fixture(scope="module")
def hostile_url(stock_db, tmp_path_factory):
    """The stock index plus one document whose text is markdown with a script and an inline handler."""
    import shutil

    import lancedb
    import pyarrow as pa
    from diachron.ingest.embedding import Embedder
    from served import serving

    from diachron.service import ServiceConfig

    uri = str(tmp_path_factory.mktemp("hostile") / "db")
    shutil.copytree(stock_db[0], uri)
    db = lancedb.connect(uri)
    chunks, documents = db.open_table("chunks"), db.open_table("documents")
    chunk = chunks.to_lance().to_table(filter="doc_id = 'stock-IBM-2011-03'", limit=1).to_pylist()[0]
    doc = documents.to_lance().to_table(filter="doc_id = 'stock-IBM-2011-03'", limit=1).to_pylist()[0]
    text = (
        "**Zebra lighthouse** sold at auction in March 2011 <script>window.__pwned = 1</script>"
        '<img src=x onerror="window.__pwned = 2">\n\n- first bid `low`\n- [catalogue](javascript:alert(1))'
    )
    vector = Embedder().embed([text])[0].tolist()
    chunk.update(chunk_id="zebra#0", doc_id="zebra", series_id="zebra", text=text, vector=vector)
    doc.update(doc_id="zebra", series_id="zebra", title="Lighthouse auction")
    chunks.add(pa.Table.from_pylist([chunk], schema=chunks.schema))
    documents.add(pa.Table.from_pylist([doc], schema=documents.schema))
    with serving(ServiceConfig(db=uri, timeout_s=120)) as url:
        yield url


def test_card_text_is_markdown_and_html_in_it_stays_text(browser, hostile_url):
    from selenium.webdriver.common.by import By

    browser.get(hostile_url + "/")
    _ask(browser, "Which zebra lighthouse was sold at auction in March 2011?")
    card = "#cards article.card[data-doc='zebra']"
    _wait(browser, lambda b: b.find_elements(By.CSS_SELECTOR, card))
    body = browser.find_element(By.CSS_SELECTOR, f"{card} .text")
    assert body.find_element(By.TAG_NAME, "strong").text == "Zebra lighthouse"
    assert "<script>window.__pwned = 1</script>" in body.text  # shown as text
    assert '<img src=x onerror="window.__pwned = 2">' in body.text
    assert [li.text for li in body.find_elements(By.TAG_NAME, "li")] == ["first bid low", "catalogue"]
    assert body.find_element(By.TAG_NAME, "code").text == "low"
    assert not body.find_elements(By.TAG_NAME, "a")  # a javascript: link is no link
    assert not body.find_elements(By.TAG_NAME, "script") and not body.find_elements(By.TAG_NAME, "img")
    assert browser.execute_script("return window.__pwned === undefined")
