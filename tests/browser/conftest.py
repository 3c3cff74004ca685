"""End-to-end tests in Debian's Chromium, driven by Playwright, against a live server.

Never a downloaded browser: we launch the `chromium` package's own executable.
Locally, a missing Chromium skips these tests with a clear message; under CI
(``CI=true``) it fails them, because a skipped browser test there hides a gap.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection
from django_tasks_db.management.commands.db_worker import Worker

# Playwright's sync API runs an asyncio loop in this thread; Django would then refuse
# ORM calls from the test body ("async unsafe"). The test thread is synchronous.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

MISSING = "Chromium not found: apt-get install chromium to run the browser tests"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
DOCS_SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
# The pictures the README's tour shows (docs/screenshots/, each well under 200 KB).
README_TOUR = {
    "first-sign-in",
    "new-book",
    "dashboard",
    "book",
    "scratchpad",
    "review",
    "decision-log",
    "library",
    "loop",
    "loop-trace",
    "charter-compare",
    "thrust-pick",
    "observations",
    "handoff",
    "codex",
}
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def chromium_path() -> str | None:
    """NOVELGRAPH_CHROMIUM may name another Chromium executable (an absent path counts as missing)."""
    found = os.environ.get("NOVELGRAPH_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    return found if Path(found).exists() else None


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if chromium_path() is None:
        terminalreporter.write_line(f"NOTE: {MISSING}", yellow=True, bold=True)


# Module-scoped, not session-scoped: Playwright's sync API keeps its asyncio loop running in the test thread
# while it is open, and asgiref's async_to_sync (the MCP tests, Django's async bridges) refuses to run in a
# thread with a running loop. Closing it after each browser module leaves the rest of the session without one,
# whichever order pytest or xdist gives the modules.
@pytest.fixture(scope="module")
def chromium() -> Iterator:
    executable = chromium_path()
    if executable is None:
        if in_ci():
            pytest.fail(f"{MISSING} (CI=true: a skipped browser test is a failure)", pytrace=False)
        pytest.skip(MISSING)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def worker():
    """A database worker in a thread of this process, started by the test and stopped after it."""
    runner = Worker(
        queue_names=["*"],
        interval=0.2,
        batch=False,
        backend_name="default",
        startup_delay=False,
        max_tasks=None,
        worker_id="browser-test",
        excluded_queue_names=[],
    )

    def run() -> None:
        try:
            runner.run()
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    yield thread.start
    runner.running = False
    if thread.is_alive():
        thread.join(timeout=30)


@pytest.fixture
def seeded(transactional_db) -> None:
    """A live-server test's database, with what the data migrations seed (the curated
    library, the loop's roster): restored after every flush by post_migrate."""


@pytest.fixture
def page(chromium, live_server):
    """A fresh browser context (no cookies) at phone-friendly desktop size, pointed at the live server."""
    context = chromium.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(10_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    # A Content-Security-Policy violation (an inline style or script) shows as a console error.
    def on_console(msg) -> None:
        if "Content Security Policy" in msg.text:
            errors.append(f"{page.url}: {msg.text}")

    page.on("console", on_console)
    page.js_errors = errors
    yield page
    context.close()


@pytest.fixture
def screenshot():
    """Save a full-page screenshot as a test artifact (and, on request, for the README)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for_docs = os.environ.get("NOVELGRAPH_DOCS_SCREENSHOTS") == "1"

    def take(page, name: str) -> Path:
        target = ARTIFACTS / f"{name}.png"
        page.screenshot(path=str(target), full_page=True)
        if for_docs and name in README_TOUR:
            DOCS_SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(DOCS_SCREENSHOTS / f"{name}.png"), full_page=False)
        return target

    return take


UNLABELLED_CONTROLS = """
() => Array.from(document.querySelectorAll("input, select, textarea"))
  .filter((el) => el.type !== "hidden" && el.offsetParent !== null)
  .filter((el) => !(el.labels && el.labels.length))
  .filter((el) => !el.getAttribute("aria-label") && !el.getAttribute("aria-labelledby"))
  .map((el) => el.outerHTML.slice(0, 120))
"""


# axe-core, vendored from its npm package (tests/browser/vendor/axe.min.js, MPL-2.0, licence beside it):
# never fetched from a CDN. The site's CSP forbids inline scripts and eval, so the source goes in through
# Playwright's evaluate (the DevTools protocol, which the page's policy does not govern), not a <script> tag.
AXE_SOURCE = (Path(__file__).resolve().parent / "vendor" / "axe.min.js").read_text(encoding="utf-8")
AXE_RUN = """
async () => {
  const result = await axe.run(document, {resultTypes: ["violations"]});
  return result.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 5).map((n) => n.target.join(" ")),
  }));
}
"""
BLOCKING_IMPACTS = {"serious", "critical"}


def assert_no_serious_axe_violations(page) -> list[dict]:
    """axe-core on the page as it is now: no violation of impact serious or critical; the rest are printed."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.evaluate(AXE_SOURCE)
    violations = page.evaluate(AXE_RUN)
    minor = [v for v in violations if v["impact"] not in BLOCKING_IMPACTS]
    for v in minor:
        print(f"axe ({v['impact']}) {page.url}: {v['id']}: {v['help']} at {v['nodes']}")
    blocking = [v for v in violations if v["impact"] in BLOCKING_IMPACTS]
    assert blocking == [], f"axe-core on {page.url}: " + "; ".join(
        f"{v['impact']} {v['id']} ({v['help']}) at {v['nodes']}" for v in blocking
    )
    return violations


def assert_accessible_basics(page) -> None:
    """Every visible form control has a label; the page has one main landmark and one h1; axe-core finds
    no serious or critical violation."""
    assert page.evaluate(UNLABELLED_CONTROLS) == [], "unlabelled form controls"
    assert page.locator("main").count() == 1
    assert page.locator("h1").count() == 1
    assert_no_serious_axe_violations(page)


WIDE_ELEMENTS = """
() => Array.from(document.querySelectorAll("main *"))
  .filter((el) => el.getBoundingClientRect().right > window.innerWidth + 1)
  .slice(-3).map((el) => el.tagName + "." + el.className + " " + el.outerHTML.slice(0, 100))
"""


def assert_fits_phone_width(page) -> None:
    """Nothing forces sideways scrolling at the current (phone) viewport."""
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 1, f"{page.url} is {overflow}px wider than the viewport: " + str(page.evaluate(WIDE_ELEMENTS))


def log_in(page, username: str, password: str) -> None:
    page.goto("/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(lambda url: "/login/" not in url)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under CI a skipped browser test (for whatever reason) is reported as a failure; an expected failure
    (a strict xfail naming what still blocks the walk) is not a skip."""
    outcome = yield
    report = outcome.get_result()
    expected_failure = hasattr(report, "wasxfail")
    if in_ci() and report.skipped and not expected_failure and item.get_closest_marker("browser") is not None:
        report.outcome = "failed"
        report.longrepr = f"browser test skipped under CI: {report.longrepr}"
