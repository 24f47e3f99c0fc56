"""The dogana page's HTML, rendered on the server: nothing to build, one small script.

Airflow shows the page in its own window, in an iframe sandboxed with allow-scripts,
allow-same-origin, allow-forms and allow-downloads (the Iframe of its external views): no
allow-top-navigation and no allow-popups, so a link to Airflow's own Asset page can neither
target the top window nor open a new one. The script (FOLLOW_IN_AIRFLOW) follows such a link
in Airflow's window through the history its router listens to, as Airflow's own links are
followed; opened on its own, the page's links are ordinary links.

Tables fit the frame: cells wrap (a date at its space, a list of checks between its names) and
nothing is wider than the window at 1,280 px.

Every value shown is escaped. A table's regions are drawn as an SVG strip along its window
axis, one block per region in axis order (blocks of equal width: an axis of strings or of
unbounded ends has no length to scale by), coloured by state, each titled with its two dates,
with the region's bounds written under the strip and the dates in a list below it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from html import escape
from typing import Any

from dogana_core.claims import RegionClaim
from dogana_core.gate import Receipt
from dogana_provider.report.lineage import SHORT, source_name, task_instance
from dogana_provider.report.status import ReceiverStatus, TableStatus
from dogana_provider.report.table import age, when

COLOURS = {  # state or outcome -> (fill, text): the strip's blocks and the badges
    "complete": ("#2e7d32", "#ffffff"),
    "patched": ("#f9a825", "#1a1a1a"),
    "expired": ("#d84315", "#ffffff"),
    "unknown": ("#9e9e9e", "#ffffff"),
    "accepted": ("#2e7d32", "#ffffff"),
    "replayed": ("#1565c0", "#ffffff"),
    "rejected": ("#b71c1c", "#ffffff"),
}

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 16px 24px;
       color: #1a1a1a; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 24px 0 8px; }
h3 { font-size: 15px; margin: 18px 0 6px; } h4 { font-size: 13px; margin: 12px 0 4px; }
p.note { color: #555; margin: 0 0 12px; font-size: 13px; }
table { border-collapse: collapse; font-size: 13px; max-width: 100%; }
th, td { text-align: left; vertical-align: top; padding: 4px 8px;
         border-bottom: 1px solid #e0e0e0; overflow-wrap: break-word; }
th { background: #f5f5f5; font-weight: 600; }
td.long { overflow-wrap: anywhere; min-width: 12em; }
.state { display: inline-block; padding: 1px 8px; border-radius: 10px; font-weight: 600;
         white-space: nowrap; }
svg { max-width: 100%; height: auto; }
.failed { color: #b71c1c; font-weight: 600; }
section.table { margin: 8px 0 18px; }
ul.regions { font-size: 12px; color: #333; margin: 4px 0 0; padding-left: 18px; }
a { color: #0b57d0; }
"""


@dataclass(frozen=True)
class Links:
    """Where a table's links go: its receipts page, and its Asset's page when Airflow has one."""

    receipts: str
    asset: str | None


FOLLOW_IN_AIRFLOW = """
document.addEventListener('click', function (event) {
  var link = event.target.closest && event.target.closest('a[data-airflow-page]');
  var airflow = window.parent;
  if (!link || airflow === window || event.button !== 0 || event.ctrlKey || event.metaKey ||
      event.shiftKey || event.altKey) return;
  try {
    var state = airflow.history.state || {};
    var key = Math.random().toString(36).slice(2, 10);
    airflow.history.pushState({usr: null, key: key, idx: (state.idx || 0) + 1}, '', link.href);
    airflow.dispatchEvent(new airflow.PopStateEvent('popstate', {state: airflow.history.state}));
    event.preventDefault();
  } catch (notAirflow) {}  // a frame of another origin: the link opens in the frame
});
"""


def page(title: str, body: str) -> str:
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width'>"
        f"<title>{escape(title)}</title><style>{STYLE}</style>"
        f"<script>{FOLLOW_IN_AIRFLOW}</script></head>"
        f"<body>{body}</body></html>"
    )


def overview(statuses: Sequence[ReceiverStatus], links: Mapping[tuple[str, str], Links]) -> str:
    """Every receiver the user may read: its tables, then each table's regions."""
    parts = [
        "<h1>dogana: which rows to trust, and as of when</h1>",
        "<p class='note'>Each table's claims, read from its receiver in one committed state. "
        "complete as of: nothing is missing as of then; deletions as of: nothing deleted is "
        "still there as of then; exact: both, at one instant. Dates are UTC.</p>",
    ]
    for status in statuses:
        parts.append(receiver_section(status, links))
    return page("dogana claims", "".join(parts))


def receiver_section(status: ReceiverStatus, links: Mapping[tuple[str, str], Links]) -> str:
    head = (
        f"<h2>Receiver {escape(status.receiver)} <small>({escape(status.dialect)}, "
        f"{len(status.tables)} tables, read {escape(when(status.at))})</small></h2>"
    )
    if not status.tables:
        return head + "<p class='note'>No table is registered in this receiver yet.</p>"
    columns = ["table", "state", "complete as of", "deletions as of", "exact as of", "age"]
    columns += ["rows", "last publication", "activation", "held", "links"]
    rows = []
    for table in status.tables:
        claims = table.claims
        link = links[(status.receiver, table.table)]
        anchors = f"<a href='{escape(link.receipts)}'>receipts</a>"
        if link.asset is not None:
            anchors += f" · <a href='{escape(link.asset)}' data-airflow-page>asset</a>"
        rows.append(
            [
                f"<a href='#{escape(_anchor(status.receiver, table.table))}'>"
                f"{escape(table.table)}</a>",
                badge(str(claims.state)),
                escape(when(claims.complete_as_of)),
                escape(when(claims.deletions_as_of)),
                escape(when(claims.exact_as_of)),
                escape(age(table.age)),
                escape("-" if table.rows is None else str(table.rows)),
                escape(_publication(table.last_publication)),
                _activation(table),
                _held(status.receiver, table),
                anchors,
            ]
        )
    sections = "".join(table_section(status.receiver, table) for table in status.tables)
    return head + html_table(columns, rows) + sections


def table_section(receiver: str, table: TableStatus) -> str:
    over = "its window, as delivered so far" if table.windowed else "the whole table"
    regions = "".join(
        f"<li>{escape(_span(r))}: {badge(str(r.state))} complete as of "
        f"{escape(when(r.complete_as_of))}, deletions as of {escape(when(r.deletions_as_of))}"
        "</li>"
        for r in table.claims.regions
    )
    return (
        f"<section class='table' id='{escape(_anchor(receiver, table.table))}'>"
        f"<h3>{escape(table.table)} {badge(str(table.claims.state))} "
        f"<small>over {escape(over)}</small></h3>"
        f"{strip(table.claims.regions)}<ul class='regions'>{regions}</ul>"
        f"{lineage_section(receiver, table)}</section>"
    )


def lineage_section(receiver: str, table: TableStatus) -> str:
    """A table's sources and its last publications' lineage (receiver/lineage_store.py): what
    fed it, read by which DAG run and task, as `dogana lineage --output` answers."""
    if not table.runs:
        return "<p class='note'>No publication of this table has a lineage edge yet.</p>"
    sources = [
        [
            escape(source_name(f.origin)),
            escape(str(f.publications)),
            escape(when(f.last_published_at)),
        ]
        for f in table.sources or ()
    ]
    runs = [
        [
            escape(when(e.published_at)),
            escape(source_name(e.origin)),
            escape(task_instance(e.origin)),
            escape(str(e.rows)),
            escape(when(e.produced_at)),
            f"<span title='{escape(e.publication_id)}'>{escape(e.publication_id[:SHORT])}</span>",
        ]
        for e in table.runs
    ]
    more = f"dogana lineage {receiver} --output {table.table}"
    return (
        "<h4>Sources</h4>"
        + html_table(["source", "publications", "last published at"], sources, long=("source",))
        + f"<h4>Recent runs <small title='{escape(more)}'>(the last {len(runs)})</small></h4>"
        + html_table(
            ["published at", "source", "dag / run / task", "rows", "produced at", "publication"],
            runs,
            long=("source", "dag / run / task"),
        )
    )


def strip(regions: Sequence[RegionClaim], width: int = 900) -> str:
    """The regions along the window axis as an SVG: a block per region, its bounds below."""
    if not regions:
        return ""
    block = width / len(regions)
    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{width + 2}' height='58' "
        f"viewBox='0 0 {width + 2} 58' role='img' aria-label='regions'>"
    ]
    for i, region in enumerate(regions):
        fill, ink = COLOURS.get(str(region.state), COLOURS["unknown"])
        x = 1 + i * block
        title = (
            f"{_span(region)}: {region.state}; complete as of {when(region.complete_as_of)}, "
            f"deletions as of {when(region.deletions_as_of)}"
        )
        parts.append(
            f"<g><title>{escape(title)}</title>"
            f"<rect x='{x:.1f}' y='1' width='{block:.1f}' height='30' fill='{fill}' "
            "stroke='#ffffff' stroke-width='2'/>"
        )
        if block >= 60:
            parts.append(
                f"<text x='{x + block / 2:.1f}' y='21' font-size='12' text-anchor='middle' "
                f"fill='{ink}'>{escape(str(region.state))}</text>"
            )
        parts.append("</g>")
        if i == 0 or block >= 60:
            parts.append(_tick(x, _end(region.low, "-∞"), "start"))
    parts.append(_tick(width + 1, _end(regions[-1].high, "+∞"), "end"))
    parts.append("</svg>")
    return "".join(parts)


def receipts_page(receiver: str, table: str, receipts: Sequence[Receipt], who: Any) -> str:
    """A table's last receipts, newest first: outcome, every check, produced_at, who published."""
    columns = ["received at", "outcome", "shape", "produced at", "rows", "tombstones"]
    columns += ["window", "checks", "published by"]
    rows = []
    for receipt in receipts:
        manifest = receipt.manifest
        checks = ", ".join(
            escape(c.name) if c.passed else f"<span class='failed'>{escape(c.name)} FAILED</span>"
            for c in receipt.checks
        )
        rows.append(
            [
                escape(when(receipt.received_at)),
                badge(str(receipt.outcome)),
                escape(manifest.shape),
                escape(when(manifest.produced_at)),
                escape(str(manifest.rows)),
                escape(str(manifest.tombstones)),
                escape("-" if manifest.window is None else _window(manifest.window)),
                checks,
                escape(who(receipt) or receipt.source or "-"),
            ]
        )
    body = (
        f"<p><a href='../../'>← all tables</a></p>"
        f"<h1>Receipts of {escape(table)} <small>in receiver {escape(receiver)}</small></h1>"
        f"<p class='note'>The last {len(receipts)} receipts, newest first; a failed check "
        "rejects its delivery, which then changes nothing.</p>"
        + html_table(columns, rows, long=("checks", "published by"))
    )
    return page(f"dogana receipts of {table}", body)


def refusal(message: str) -> str:
    return page("dogana claims", f"<h1>dogana</h1><p class='note'>{escape(message)}</p>")


def badge(state: str) -> str:
    fill, ink = COLOURS.get(state, ("#e0e0e0", "#1a1a1a"))
    return f"<span class='state' style='background:{fill};color:{ink}'>{escape(state)}</span>"


def html_table(
    columns: Sequence[str], rows: Sequence[Sequence[str]], long: Sequence[str] = ()
) -> str:
    """Cells are HTML already escaped by the caller; the cells of the columns named long (lists
    of names, run ids) may break anywhere rather than widen the table past the window."""
    head = "".join(f"<th>{escape(c)}</th>" for c in columns)
    opening = ["<td class='long'>" if c in long else "<td>" for c in columns]
    body = "".join(
        "<tr>" + "".join(f"{o}{c}</td>" for o, c in zip(opening, row, strict=True)) + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _tick(x: float, label: str, anchor: str) -> str:
    return (
        f"<text x='{x:.1f}' y='48' font-size='11' text-anchor='{anchor}' fill='#444'>"
        f"{escape(label)}</text>"
    )


def _span(region: RegionClaim) -> str:
    opening = "(" if region.low is None else "["
    return f"{opening}{_end(region.low, '-∞')}, {_end(region.high, '+∞')})"


def _end(value: Any, unbounded: str) -> str:
    if value is None:
        return unbounded
    if isinstance(value, datetime):
        return when(value)
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


def _window(window: Sequence[Any]) -> str:
    return f"[{_end(window[0], '')}, {_end(window[1], '')}]"


def _publication(receipt: Receipt | None) -> str:
    if receipt is None:
        return "-"
    return f"{when(receipt.received_at)} ({receipt.manifest.shape})"


def _activation(table: TableStatus) -> str:
    """pending, active until X, expired at X or not required; why, when it stops publication."""
    state = table.activation
    line = escape(state.line())
    if state.publishes:
        return line
    return f"<span class='failed' title='{escape(state.detail())}'>{line}</span>"


def _held(receiver: str, table: TableStatus) -> str:
    """The deliveries held for a person (receiver/holds.py), each titled with the command that
    shows its violating rows: nothing of them is published until someone releases it."""
    if not table.held:
        return "-"
    return ", ".join(
        f"<span class='failed' title='{escape(f'dogana hold show {receiver} {hold.hold_id}')}'>"
        f"{escape(hold.hold_id)} since {escape(when(hold.held_at))}</span>"
        for hold in table.held
    )


def _anchor(receiver: str, table: str) -> str:
    return f"{receiver}.{table}"
