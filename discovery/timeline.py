"""The codex timeline: canon on a chapter axis, drawn server-side as SVG (like the loop's pictures).

One lane per approved claim: a bar over the chapters in which the fact is true (an arrow when it
holds to the end; dashed grey while it is a secret the reader does not know yet), a diamond where the
reader first sees it, and a text label for what colour
alone would tell (reveal, decisive evidence, secret still held, fair-play finding). Pure SVG with
<title>/<desc>; styling lives in static/css/app.css (classes only, no style attributes, no scripts).

The axis is bounded: it draws a window of at most ``TIMELINE_CHAPTERS`` chapters (by default from the first
chapter the page's claims are true in), and the page links the earlier and later windows (``?chapters_from=``).
A bar is clipped to the window; the arrow of a fact that holds to the end shows only in the window holding
the last chapter.
"""

from __future__ import annotations

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from .story_rules import label_of

LABEL_W, CHAPTER_W, LANE_H, AXIS_H, PAD, STATUS_W = 230, 44, 30, 34, 12, 210
TIMELINE_CHAPTERS = 50  # the chapters one drawing shows (VIEW_PAGE)


def _clip(text: str, n: int = 34) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _status(row: dict, flagged: dict[str, str]) -> tuple[str, str]:
    """The lane's text tag and its class: what the lane is, in words."""
    if row["id"] in flagged:
        return f"{row['reveal']} · {flagged[row['id']]}", "tl-flag"
    if row.get("reveal", "none") != "none":
        return f"{row['reveal']} revealed ch {row['first_shown_chapter']}", "tl-reveal"
    if row.get("decisive"):
        shown = row.get("first_shown_chapter")
        return ("decisive clue" + (f", shown ch {shown}" if shown else ", never shown")), "tl-decisive"
    if row.get("first_shown_chapter") is None and row.get("known_by") != "reader":
        return "secret still held", "tl-secret"
    return row.get("visibility", ""), "tl-plain"


def last_chapter(rows: list[dict], chapters: list[dict]) -> int:
    numbers = [c["number"] for c in chapters]
    for row in rows:
        numbers += [
            row[k] for k in ("true_from_chapter", "true_until_chapter", "first_shown_chapter") if row.get(k) is not None
        ]
    return max([*numbers, 1])


def timeline_window(rows: list[dict], chapters: list[dict], first: int | None = None) -> dict:
    """The chapters one drawing shows: ``first`` to ``last`` (at most ``TIMELINE_CHAPTERS``) of ``chapters``
    (the last chapter the book or the page's claims name); by default from the first chapter the page's claims
    are true in. ``earlier`` and ``later``: where the windows before and after start, or None."""
    total = last_chapter(rows, chapters)
    if first is None:
        first = min([row.get("true_from_chapter") or 1 for row in rows] or [1])
    first = min(max(first, 1), total)
    last = min(first + TIMELINE_CHAPTERS - 1, total)
    return {
        "first": first,
        "last": last,
        "chapters": total,
        "earlier": max(first - TIMELINE_CHAPTERS, 1) if first > 1 else None,
        "later": last + 1 if last < total else None,
    }


def timeline_svg(
    rows: list[dict], chapters: list[dict], findings: list[dict], window: dict | None = None
) -> SafeString:
    """Each claim's truth span, first showing and secrecy on one chapter axis (a window of at most
    ``TIMELINE_CHAPTERS`` chapters, ``timeline_window``); fair-play findings marked."""
    flagged = {f["reveal"]["id"]: f["code"] for f in findings}
    late = {e["id"] for f in findings for e in f["evidence"]}
    window = window or timeline_window(rows, chapters)
    first, last, total = window["first"], window["last"], window["chapters"]
    width = PAD * 2 + LABEL_W + (last - first + 1) * CHAPTER_W + STATUS_W
    height = PAD * 2 + AXIS_H + max(len(rows), 1) * LANE_H
    x0 = PAD + LABEL_W

    def cx(chapter: int) -> int:
        return x0 + (chapter - first) * CHAPTER_W + CHAPTER_W // 2

    body = ['<g class="tl-axis">']
    for n in range(first, last + 1):
        x = x0 + (n - first) * CHAPTER_W
        body.append(
            f'<line class="tl-grid" x1="{x}" y1="{PAD + AXIS_H - 6}" x2="{x}" y2="{height - PAD}"/>'
            f'<text class="tl-chapter" x="{x + CHAPTER_W // 2}" y="{PAD + 16}" text-anchor="middle">ch {n}</text>'
        )
    body.append("</g>")
    if not rows:
        body.append(f'<text class="tl-sub" x="{PAD}" y="{PAD + AXIS_H + 20}">No approved canon yet.</text>')
    for i, row in enumerate(rows):
        y = PAD + AXIS_H + i * LANE_H
        mid = y + LANE_H // 2
        true_from = row.get("true_from_chapter") or 1
        until = row.get("true_until_effective")
        # The span drawn: the chapters of the window in which the fact is true (none: only its label and tag).
        start, end = max(true_from, first), min(until or total, last)
        tag, cls = _status(row, flagged)
        shown = row.get("first_shown_chapter")
        if row["id"] in late:
            tag, cls = tag + " · too late", "tl-flag"
        title = (
            f"{label_of(row)} — true from chapter {true_from}"
            + (f" to {until}" if until else " to the end")
            + (f"; first shown in chapter {shown}" if shown else "; not shown to the reader")
            + f"; {tag}"
        )
        lane = [f'<g class="tl-lane {cls}" id="tl-{row["id"]}"><title>{escape(title)}</title>']
        lane.append(f'<text class="tl-label" x="{PAD}" y="{mid + 4}">{escape(_clip(label_of(row)))}</text>')
        if start <= end:
            bar_x = x0 + (start - first) * CHAPTER_W + 4
            bar_w = (end - start + 1) * CHAPTER_W - 8
            lane.append(f'<rect class="tl-span" x="{bar_x}" y="{mid - 6}" width="{bar_w}" height="12" rx="4"/>')
            held_until = (shown - 1) if shown is not None else end
            if row.get("known_by") != "reader" and held_until >= start:
                # The chapters in which the fact is true but the reader does not know it yet: a secret held.
                held_w = (min(held_until, end) - start + 1) * CHAPTER_W - 8
                lane.append(
                    f'<rect class="tl-held" x="{bar_x}" y="{mid - 6}" width="{held_w}" height="12" rx="4">'
                    f"<title>secret held: chapters {start}–{min(held_until, end)}</title></rect>"
                )
            if until is None and last == total:
                tip = bar_x + bar_w
                lane.append(f'<path class="tl-open" d="M {tip} {mid - 8} L {tip + 8} {mid} L {tip} {mid + 8} z"/>')
        if shown is not None and first <= shown <= last:
            x = cx(shown)
            diamond = f"M {x} {mid - 10} L {x + 9} {mid} L {x} {mid + 10} L {x - 9} {mid} z"
            lane.append(f'<path class="tl-shown" d="{diamond}"/>')
        lane.append(
            f'<text class="tl-tag" x="{x0 + (last - first + 1) * CHAPTER_W + 12}" y="{mid + 4}">'
            f"{escape(_clip(tag, 30))}</text></g>"
        )
        body.append("".join(lane))
    secrets = sum(1 for row in rows if _status(row, flagged)[1] == "tl-secret")
    desc = (
        f"{len(rows)} fact(s) over chapters {first}–{last} of {total}: bars span the chapters in which each "
        f"is true, diamonds mark where the reader first sees it; {secrets} secret(s) still held; "
        + (f"{len(findings)} fair-play finding(s)" if findings else "fair play passes")
        + "."
    )
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="loop-svg codex-svg" id="codex-timeline" role="img" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'aria-labelledby="codex-timeline-title codex-timeline-desc">'
        f'<title id="codex-timeline-title">Canon timeline</title><desc id="codex-timeline-desc">{escape(desc)}</desc>'
    )
    return mark_safe(head + "".join(body) + "</svg>")
