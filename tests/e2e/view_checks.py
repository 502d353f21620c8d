"""What a computed view looks like in the page: charts with data, tables with rows, text."""

from __future__ import annotations

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
