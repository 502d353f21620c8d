"""What a computed view looks like in the page: charts with data, tables with rows, text."""

from __future__ import annotations

from helpers import wait_until

# a Plotly chart that drew data (a message-only figure draws none of these)
DATA_MARKS = "g.trace, g.hm, .barlayer .point, .scatterlayer .trace"


def plot_has_data(plot) -> bool:
    return plot.locator(DATA_MARKS).count() > 0


def table_rows(table) -> int:
    """Rows of a Gradio Dataframe below its header (its grid is virtualised: read aria-rowcount)."""
    grid = table if table.get_attribute("role") == "grid" else table.get_by_role("grid").first
    return max(int(grid.get_attribute("aria-rowcount") or 0) - 1, 0)


def computed(scope) -> dict:
    """Every chart and table inside ``scope`` (visible ones), and whether each holds data."""
    plots = [p for p in scope.locator(".js-plotly-plot").all() if p.is_visible()]
    tables = [t for t in scope.locator("[role=grid]").all() if t.is_visible()]
    return {
        "plots": [plot_has_data(p) for p in plots],
        "tables": [table_rows(t) for t in tables],
    }


def wait_computed(scope, plots: int = 0, tables: int = 0, timeout_s: float = 180.0) -> dict:
    """Wait until ``scope`` shows at least ``plots`` charts with data and ``tables`` tables
    with rows (or, with neither given, one of either); returns what was found.

    Polls the page instead of waiting for the app's requests to end: Gradio's client may
    cancel its answer stream once told it is complete, and a cancelled stream is reported
    neither finished nor failed, so "no request open" can wait forever."""

    def ready():
        found = computed(scope)
        drawn, filled = sum(found["plots"]), sum(rows > 0 for rows in found["tables"])
        enough = drawn >= plots and filled >= tables if plots or tables else drawn or filled
        return found if enough else None

    return wait_until(ready, "a computed view", timeout_s=timeout_s, poll_s=0.5)
