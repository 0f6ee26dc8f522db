"""The review desk in a real headless Chromium (as tests/test_browser.py drives reports).

The desk is served by uvicorn; reviewers sign in with their links, label with the
keyboard, and watch the agreement page move. Skipped without a browser, failed instead
under PROCTOR_REQUIRE_BROWSER=1 (CI).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from desk_support import live_desk, queue, reviewer, run_clinical
from proctor import Store
from proctor.labels.desk_settings import DeskSettings
from report_runs import PWN, run_hostile
from test_browser import driver  # noqa: F401  (Chromium, set up as the report tests do)

NOTE = "step 4 reads the wrong patient"


@pytest.fixture(scope="module")
def browser(request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue("driver")


@pytest.fixture(scope="module")
def desk_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    folder = tmp_path_factory.mktemp("desk-browser")
    path = folder / "p.db"
    with Store(path) as store:
        base = run_clinical(store, "perfect", trials=2)
        cand = run_clinical(store, "sloppy", trials=2)
        hostile = run_hostile(store).run
        queue(store, cand, share=1.0)  # every item wants two reviewers
        queue(store, cand, baseline=base, pairs=True, share=0.0, sample_rate=1.0)
        queue(store, hostile, share=0.0)
        links = {
            name: reviewer(store, name, url="", adjudicator=name == "judge")
            for name in ("alice", "bob", "judge")
        }
    with live_desk(path, DeskSettings(show_automated=False)) as url:
        yield {"url": url, "links": links, "base": base, "cand": cand, "hostile": hostile}


def sign_in_as(browser: Any, site: dict[str, Any], name: str) -> None:
    from selenium.webdriver.common.by import By

    browser.delete_all_cookies()
    browser.get(site["url"] + site["links"][name])
    browser.find_element(By.ID, "signin").click()
    wait_for(browser, lambda d: arrived(d, "") and f"signed in as {name}" in body_text(d))


def body_text(browser: Any) -> str:
    return str(browser.execute_script("return document.body ? document.body.innerText : ''"))


def arrived(browser: Any, fragment: str) -> bool:
    """The browser is on a page whose address holds `fragment`, and it has loaded."""
    loaded = browser.execute_script("return document.readyState") == "complete"
    return fragment in browser.current_url and loaded


def keys(browser: Any, *sequence: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    chain = ActionChains(browser)
    for key in sequence:
        chain.send_keys(key)
    chain.perform()


def save(browser: Any) -> None:
    """Ctrl+Enter: save the label from anywhere, the note included."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    ActionChains(browser).key_down(Keys.CONTROL).send_keys(Keys.ENTER).key_up(
        Keys.CONTROL
    ).perform()


def wait_for(browser: Any, condition: Any) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, 15).until(condition)


def severe(browser: Any) -> list[dict[str, Any]]:
    return [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]


def test_label_with_the_keyboard_and_see_agreement_move(
    browser: Any, desk_site: dict[str, Any]
) -> None:
    from selenium.webdriver.common.by import By

    run_id = desk_site["cand"].run_id
    sign_in_as(browser, desk_site, "alice")
    browser.get(f"{desk_site['url']}/runs/{run_id}/queue")
    keys(browser, "n")
    wait_for(browser, lambda d: arrived(d, "/items/"))
    item_url = browser.current_url
    assert "Automated verdict" not in browser.page_source  # hidden before labelling
    keys(browser, "f", "2", "e")
    focused = browser.execute_script("return document.activeElement.name")
    assert focused == "note"
    keys(browser, NOTE)
    save(browser)
    wait_for(browser, lambda d: d.find_elements(By.ID, "labelled"))
    labelled = browser.find_element(By.ID, "labelled").text
    assert "fail" in labelled and "wrong_outcome" in labelled
    assert "Automated verdict" in browser.page_source  # shown once labelled
    browser.get(f"{desk_site['url']}/runs/{run_id}/agreement")
    assert "only an adjudicator" in body_text(browser)  # other people's labels: not hers
    browser.get_log("browser")  # that 403 is the one error expected
    sign_in_as(browser, desk_site, "judge")
    browser.get(f"{desk_site['url']}/runs/{run_id}/agreement")
    assert "No trial has two reviewers' labels yet" in browser.find_element(By.ID, "pairs").text

    sign_in_as(browser, desk_site, "bob")
    browser.get(f"{desk_site['url']}/runs/{run_id}/queue")
    keys(browser, "n")
    wait_for(browser, lambda d: arrived(d, "/items/"))
    assert browser.current_url == item_url  # the item that wants a second reviewer
    keys(browser, "p", "1", "s")
    wait_for(browser, lambda d: d.find_elements(By.ID, "labelled"))
    sign_in_as(browser, desk_site, "judge")
    browser.get(f"{desk_site['url']}/runs/{run_id}/agreement")
    row = browser.find_element(By.CSS_SELECTOR, "#pairs tbody tr").text
    assert row.startswith("alice · bob 1 0.0%")  # one shared trial, and they disagree
    waiting = browser.find_element(By.PARTIAL_LINK_TEXT, "Adjudication").text
    assert waiting == "Adjudication (1 waiting)"
    assert severe(browser) == []


def test_a_blinded_pair_shows_no_run_or_agent_names(
    browser: Any, desk_site: dict[str, Any]
) -> None:
    from selenium.webdriver.common.by import By

    sign_in_as(browser, desk_site, "judge")
    cand, base = desk_site["cand"], desk_site["base"]
    browser.get(f"{desk_site['url']}/runs/{cand.run_id}/queue")
    pairs = [a.get_attribute("href") for a in browser.find_elements(By.PARTIAL_LINK_TEXT, "pair")]
    assert pairs
    browser.get(pairs[0])
    text, source = browser.find_element(By.TAG_NAME, "body").text, browser.page_source
    assert "Trial A" in text and "Trial B" in text
    names = [cand.run_id, base.run_id, "clinical-sloppy", "clinical-perfect", "agents.py"]
    assert [n for n in names if n in source] == []
    assert severe(browser) == []


def test_a_post_without_its_csrf_token_is_rejected(browser: Any, desk_site: dict[str, Any]) -> None:
    from selenium.webdriver.common.by import By

    sign_in_as(browser, desk_site, "judge")
    browser.get(f"{desk_site['url']}/runs/{desk_site['cand'].run_id}/queue")
    keys(browser, "n")
    wait_for(browser, lambda d: arrived(d, "/items/"))
    browser.execute_script("document.querySelector('#label-form input[name=csrf]').remove()")
    keys(browser, "p", "1", "s")
    wait_for(browser, lambda d: arrived(d, "/label") and body_text(d).count("403"))
    assert browser.find_element(By.TAG_NAME, "h1").text == "403"
    assert "CSRF" in browser.find_element(By.CSS_SELECTOR, ".error").text


def test_xss_payloads_in_a_trace_execute_nothing(browser: Any, desk_site: dict[str, Any]) -> None:
    from selenium.webdriver.common.by import By

    hostile = desk_site["hostile"]
    sign_in_as(browser, desk_site, "alice")
    browser.get(f"{desk_site['url']}/runs/{hostile.run_id}/queue")
    browser.get_log("browser")
    keys(browser, "n")
    wait_for(browser, lambda d: arrived(d, "/items/"))
    item_url = browser.current_url
    # the reviewer's own note quotes the payload too, and flags the task (the agreement
    # page lists flags with their notes)
    browser.find_element(By.NAME, "ambiguous").click()
    keys(browser, "f", "9", "e", f"<script>{PWN}</script>")
    save(browser)
    wait_for(browser, lambda d: d.find_elements(By.ID, "labelled"))
    r = hostile.results[0]
    for who, url in (
        ("alice", item_url),
        ("alice", f"{desk_site['url']}/runs/{hostile.run_id}/trials/{r.task_id}/{r.trial}"),
        ("judge", f"{desk_site['url']}/runs/{hostile.run_id}/agreement"),  # adjudicators' page
    ):
        if who == "judge":
            sign_in_as(browser, desk_site, who)
        browser.get(url)
        shown = browser.execute_script(
            "return document.body.innerText + Array.from(document.querySelectorAll('textarea'),"
            " t => t.value).join()"
        )
        assert f"<script>{PWN}</script>" in shown  # shown, as text
        for pre in browser.find_elements(By.TAG_NAME, "pre"):
            pre.click()
        assert browser.execute_script("return typeof window.__pwned") == "undefined"
        assert browser.execute_script("return document.querySelectorAll('img, iframe').length") == 0
        scripts = browser.execute_script(
            "return Array.from(document.scripts, s => s.getAttribute('src'))"
        )
        assert scripts == ["/static/desk.js"]
        assert severe(browser) == []
