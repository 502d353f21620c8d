"""First visit: every tab's and every lesson step's default view, opened 20 s after start-up.

    .venv/bin/python -m bench.first_visit [--repeat 3] [--after 20] [--how click|link] [--read S] [--url URL]

The target: from 20 s after start-up, every default view is ready within 1 s of
opening it (the app computes them in the background right after start-up:
``components/shell/warm_views.py``; the Lessons' three longest training runs are restored from
disk when a run with the same code and weights was kept: ``models/runtime/run_store.py``; the
bench prints how many kept runs the app will find). Each run starts the app as a user would
(``python app.py`` on a free port; a fresh process per run) and waits until ``--after`` seconds
after the process started. Then Debian's Chromium (Playwright, headless, every host but this
machine unreachable) opens the views in the order a visitor meets them (the tabs in order,
the lesson's steps where the Lessons tab stands), in one of two ways:

* ``click`` (default; a visitor in class): the page is opened once, then each tab is clicked
  and the lesson walked with its "Next" button. A view's time runs from the click to the view
  shown (the click's time taken as the bench makes it, so a click that waits for the page's
  main thread counts its wait, as a visitor's would); the first tab's from the page's first
  tab being shown (the page's own boot, Gradio's
  client loading its scripts and the app's layout, is printed beside it: it is not a view).
* ``link``: each view's deep link (``?tab=<slug>``, ``?tab=lessons&lesson=<slug>``:
  ``components/shell/links.py``) loaded one after the other in one browser context (its cache
  holds the page's scripts after the first, loaded unmeasured); a view's time runs from the
  link's navigation, page load included, to the view shown.

``--read S`` (click only) waits S seconds after each view is shown before the next click, as a
visitor reading it would (default 0: the next click comes as soon as the view is shown, the
strict figure the target is read on). Work the page does in the background while a visitor
reads (present.js imports Gradio's Plotly chunk once the first answer is drawn: about a
second of the main thread on the 2-core machine, one traced run) lands on a click only
without the pause.

Times come from the page's own clock (``performance.now()``), read on every painted frame:
**tab** (the view's tab is the selected one) and **shown** (the view's charts drawn with data,
its tables with rows, its text filled: ``READY`` below, the same marks as the browser tests'
``tests/e2e/view_checks.py``); **after tab** is shown - tab.

Prints the machine, a table per run (view, tab ms, shown ms, after tab ms), its max and a
``SUMMARY first visit`` line (target <= 1000 ms each); with ``--repeat N`` the median and
range of the max over the runs. ``--url`` measures an app already running (no start-up
wait: the caller chose the moment).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import time
from dataclasses import dataclass
from urllib.parse import quote, urlencode

from components.lessons.copy import STEPS
from components.shell.links import TABS
from tests.helpers import CHROMIUM_FLAGS

TARGET_MS = 1000.0  # each default view, from opening it
AFTER_S = 20.0  # opened this long after the app's process started
HOW = {"link": "link opened to view shown",
       "click": "tab or Next clicked to view shown; fill-mask: its tab shown to view shown"}
TIMEOUT_MS = 120_000  # a view that never shows fails the run (no timing is read from it)


# What "shown" means per tab: every check holds. A check is (CSS selector, what): "plot" a
# Plotly chart that drew data, "rows" a table with a row below its header, "text" an
# element with text, "any" a chart with data or a table with rows. The selectors are the
# elem_ids of each tab's arrival outputs (tests/unit/test_bench_first_visit.py checks that
# the app has them); the panel is the visible tab panel. Pre-training and Models compute
# nothing on arrival: their default view is drawn with the page.
PANEL = '[role="tabpanel"]'  # the visible one: every check reads visible elements only
READY: dict[str, tuple[tuple[str, str], ...]] = {
    # the first screen's bars are HTML (the Plotly chart of the same bars waits in a closed
    # accordion): no Plotly chunk to evaluate before them (components/fill_mask/plots.py)
    "fill-mask": (("#fill-mask-table", "rows"), ("#fill-mask-status", "text"), ("#fill-mask-bars td", "text")),
    "why-this-guess": (("#attribution-curves", "plot"), ("#attribution-table", "rows")),
    "masking-lab": (("#masking-strips .tok", "text"),),
    "attention": (("#attention-heatmap", "plot"), ("#attention-status", "text")),
    "inside-one-layer": (("#inside-figure", "plot"), ("#inside-checks", "text")),
    "embeddings": (("#embeddings-summary", "text"), (PANEL, "plot")),
    "compare": (("#compare-fill-mask", "rows"),),
    "pre-training": ((PANEL, "any"),),
    "fine-tuning-search": (("#search-note", "text"),),
    "models": ((PANEL, "rows"),),
    "which-parts-matter": (("#parts-bars", "plot"), ("#parts-knockout-table", "rows")),
    "class": (("#class-status", "text"),),
}
# Lesson steps: charts and tables of each step's view (as tests/e2e/test_lessons_browser.py);
# the masking step's view is a strip of tokens (HTML).
STEP_READY: dict[str, tuple[int, int]] = {
    "encoder-vs-decoder": (2, 0), "before-bert": (2, 2), "tokens-embeddings": (1, 1), "attention": (1, 0),
    "knock-out-a-head": (1, 0), "answer-across-layers": (1, 1), "masking": (0, 0),
    "mlm-loss": (0, 2), "nsp": (0, 1), "variants": (1, 2), "pooling-retrieval": (1, 2), "fine-tuning": (1, 0),
    "sentence-encoder": (2, 0), "sentence-pairs": (1, 0), "span-head": (1, 0), "retrieve-then-read": (1, 1),
    "distillation": (1, 0),
}

# Runs in the page on every painted frame: notes when the link's tab is selected and when
# every check holds (performance.now(): ms from the start of the navigation).
READY_JS = """([label, checks]) => {
  const MARKS = 'g.trace, g.hm, .barlayer .point, .scatterlayer .trace';
  const visible = e => !!(e.offsetWidth || e.offsetHeight || e.getClientRects().length);
  const all = sel => [...document.querySelectorAll(sel)].filter(visible);
  const plots = sel => all(sel).flatMap(e => e.matches('.js-plotly-plot') ? [e] : [...e.querySelectorAll('.js-plotly-plot')])
      .filter(p => visible(p) && p.querySelector(MARKS)).length;
  const rows = sel => all(sel).flatMap(e => e.matches('[role=grid]') ? [e] : [...e.querySelectorAll('[role=grid]')])
      .filter(g => visible(g) && (parseInt(g.getAttribute('aria-rowcount') || '0') - 1) > 0).length;
  const text = sel => all(sel).filter(e => e.textContent.trim().length > 0).length;
  const holds = ([sel, what, n]) => (what === 'plot' ? plots(sel) : what === 'rows' ? rows(sel)
      : what === 'text' ? text(sel) : plots(sel) + rows(sel)) >= (n || 1);
  const t = performance.now();
  const tab = document.querySelector('[role="tab"][aria-selected="true"]');
  if (window.__tabAt === undefined && tab && tab.textContent.trim() === label) window.__tabAt = t;
  if (window.__tabAt === undefined || !checks.every(holds)) return false;
  return {tab: window.__tabAt, shown: t};
}"""


@dataclass(frozen=True)
class View:
    name: str  # as the table prints it
    query: dict  # the deep link's parameters
    tab_label: str  # the tab the link selects
    checks: tuple  # (selector, what, count): all hold once the view is shown


def views() -> list[View]:
    """Every tab's and every lesson step's default view, in the order a visitor meets them."""
    found = []
    for tab in TABS:
        if tab.slug == "lessons":  # the tab opens on step 1: each step is a view of its own
            for number, step in enumerate(STEPS, 1):
                plots, tables = STEP_READY[step.slug]
                group = f".lesson-{step.slug}"
                checks = ((group, "plot", plots),) * bool(plots) + ((group, "rows", tables),) * bool(tables)
                found.append(View(f"lessons {number}: {step.slug}", {"tab": "lessons", "lesson": step.slug},
                                  tab.label, checks or ((f"{group} .tok", "text", 1),)))
        else:
            found.append(View(tab.slug, {"tab": tab.slug}, tab.label,
                              tuple((sel, what, 1) for sel, what in READY[tab.slug])))
    return found


def measure(page, url: str, view: View) -> tuple[float, float]:
    """(tab ms, shown ms) of one view, from the start of the link's navigation."""
    page.goto(url.rstrip("/") + "/?" + urlencode(view.query, quote_via=quote), wait_until="commit")
    return shown(page, view)


def shown(page, view: View) -> tuple[float, float]:
    handle = page.wait_for_function(READY_JS, arg=[view.tab_label, [list(c) for c in view.checks]],
                                    polling="raf", timeout=TIMEOUT_MS)
    times = handle.json_value()
    return times["tab"], times["shown"]


# A visitor's click (the tab counts as shown at the click).
CLICK_JS = """([role, name]) => {
  const found = [...document.querySelectorAll(role === 'tab' ? '[role="tab"]' : 'button')]
      .find(e => e.textContent.trim() === name);
  window.__tabAt = performance.now();
  found.click();
  return window.__tabAt;
}"""


def click(page, view: View, previous: View | None, origin: float) -> tuple[float, float]:
    """(0, shown ms) of one view, from the visitor's click: its tab, or the lesson's "Next →".

    The clock starts when the bench clicks, read on this side and put on the page's clock
    (``performance.timeOrigin``; one machine, one clock), not when the page's script gets to
    run the click: while the page is busy with a long task (the previous view's charts still
    drawing), a visitor's click waits for it, and so does this one's time.
    """
    step = previous is not None and view.query.get("lesson") and previous.query.get("lesson")
    clicked = time.time() * 1000 - origin  # now, on the page's clock (origin: its timeOrigin)
    page.evaluate(CLICK_JS, ["button", "Next →"] if step else ["tab", view.tab_label])
    return 0.0, shown(page, view)[1] - clicked


def one_run(browser, url: str, started: float | None, after_s: float, how: str,
            read_s: float = 0.0) -> list[tuple[View, float, float]]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = context.new_page()
        outside = []
        page.on("request", lambda r: outside.append(r.url) if not r.url.startswith(
            ("http://127.0.0.1", "ws://127.0.0.1", "data:", "blob:")) else None)
        if started is not None and how == "link":
            page.goto(url, wait_until="commit")  # the scripts into the browser's cache (not measured)
            page.wait_for_selector('[role="tab"]', timeout=TIMEOUT_MS)
        if started is not None:
            wait = started + after_s - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            print(f"opening the views {time.monotonic() - started:.1f} s after the app's process started"
                  + (" (later than asked: the page was not up in time)" if wait < 0 else ""))
        if how == "link":
            results = [(view, *measure(page, url, view)) for view in views()]
        else:  # the page opens on its first tab (a view of its own), then a click per view
            first, *rest = views()
            results, previous = [(first, *measure(page, url, first))], first
            origin = page.evaluate("performance.timeOrigin")  # the page's clock, read while idle
            for view in rest:
                time.sleep(read_s)  # a visitor reading the view before the next click (default: none)
                results.append((view, *click(page, view, previous, origin)))
                previous = view
        if outside:
            print(f"note: {len(outside)} requests to other hosts were blocked, e.g. {outside[0]}")
        return results
    finally:
        context.close()


def report(results, how: str = "link", described: str | None = None) -> float:
    """Prints the table; returns the largest view time the target is checked on: from the link
    (``link``), from the click (``click``; the first view from the page's boot, its tab shown)."""
    link = how == "link"
    print(f"{'view':<32} {'tab ms':>8} {'shown ms':>9} {'after tab ms':>13}")
    for view, tab, shown_ms in results:
        print(f"{view.name:<32} {tab:>8.0f} {shown_ms:>9.0f} {shown_ms - tab:>13.0f}")
    timed = [(view, shown_ms if link else shown_ms - tab) for view, tab, shown_ms in results]
    worst = max(timed, key=lambda r: r[1])
    slow = [view.name for view, ms in timed if ms > TARGET_MS]
    print(f"max: {worst[1]:.0f} ms ({worst[0].name})"
          + (f"; after tab, max {max(s - t for _, t, s in results):.0f} ms" if link else
             f"; the page's boot (navigation to its first tab shown, Gradio's client): {results[0][1]:.0f} ms")
          + f"; median {statistics.median(ms for _, ms in timed):.0f} ms; "
          f"{len(slow)} of {len(results)} over {TARGET_MS:.0f} ms{': ' + ', '.join(slow) if slow else ''}")
    ok = worst[1] <= TARGET_MS
    print(f"SUMMARY first visit max of {len(results)} views ({described or HOW[how]}): {worst[1]:.0f} ms "
          f"(target <= {TARGET_MS:.0f} ms each): {'pass' if ok else 'FAIL'}")
    return worst[1]


def kept_runs_line() -> str:
    """What the app will find on disk: the Lessons' kept runs (models/runtime/run_store.py)."""
    from models.runtime.run_store import keeping, runs_dir

    found = sorted(runs_dir().glob("*.pt")) if runs_dir().is_dir() else []
    if not keeping():
        return "kept runs: off (ENCODER_LAB_KEEP_RUNS=0): the Lessons' training steps train at every start"
    return (f"kept runs on disk at start: {len(found)} in {runs_dir()} (a restart restores the Lessons' runs kept "
            "with the same code and weights; none: this start trains them)")


def plotly_line() -> str:
    """Which plotly.js the app's charts get (the app reads the same environment)."""
    from components.shell.present import lab_plotly, plotly_chunk

    if plotly_chunk() is None:
        return "Gradio's Plotly chunk as shipped (all of plotly.js inlined)"
    _, version, traces = lab_plotly()
    return f"the app's partial plotly.js {version} ({', '.join(traces)}) in Gradio's Plotly chunk"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs, each on a freshly started app")
    parser.add_argument("--after", type=float, default=AFTER_S, help="seconds after start-up to open the views")
    parser.add_argument("--how", choices=tuple(HOW), default="click",
                        help="click: one page, then each tab clicked and the lesson walked with Next (default); "
                             "link: each view by its deep link, a page load each")
    parser.add_argument("--read", type=float, default=0.0,
                        help="click: seconds a visitor reads each view before the next click (default 0)")
    parser.add_argument("--url", default=None, help="an app already running (measured at once, once)")
    args = parser.parse_args()
    if args.read and args.how != "click":
        parser.error("--read is a pause between clicks: it needs --how click")
    how = HOW[args.how] + (f", {args.read:g} s read after each view" if args.read else "")
    from playwright.sync_api import sync_playwright

    from bench.bench_common import machine_line, spread_text
    from bench.load import start_app

    print(machine_line())
    executable = shutil.which("chromium")
    if not executable:
        raise SystemExit("Debian's chromium is not on the PATH (apt-get install chromium; never `playwright install`)")
    print(f"browser: {executable} (headless); views: {len(views())} ({len(TABS) - 1} tabs + {len(STEPS)} lesson steps)")
    print(f"charts: {plotly_line()}")
    maxima = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_FLAGS)
        try:
            for run in range(1, (1 if args.url else args.repeat) + 1):
                print(f"\nrun {run} of {args.repeat}")
                if args.url:
                    maxima.append(report(one_run(browser, args.url, None, 0, args.how, args.read), args.how, how))
                    continue
                print(kept_runs_line())
                started = time.monotonic()
                proc, url = start_app()
                try:
                    print(f"page served {time.monotonic() - started:.1f} s after start")
                    maxima.append(report(one_run(browser, url, started, args.after, args.how, args.read), args.how, how))
                finally:
                    proc.terminate()
                    proc.wait(timeout=30)
        finally:
            browser.close()
    if len(maxima) > 1:
        print(f"\nSUMMARY first visit max view ({how}) over {len(maxima)} runs (fresh start each): "
              f"{spread_text(maxima, '{:.0f}')} ms (target <= {TARGET_MS:.0f} ms each): "
              f"{'pass' if max(maxima) <= TARGET_MS else 'FAIL'}")


if __name__ == "__main__":
    main()
