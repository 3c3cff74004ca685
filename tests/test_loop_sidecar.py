"""The loop's sidecar on disk (seed 002, issue 29): ``loop_export`` writes ``<discovery-root>/<slug>/_state/*.json``
beside the committed artifacts with ``screens/*.svg``; ``loop_import`` reads that folder through the zip's
import; the root is resolved setting → default → marker, and nothing is created until something is written."""

from __future__ import annotations

import io
import json
import uuid
import zipfile
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from discovery.loop.models import BlackboardArtifact
from discovery.loop.services.sidecar import MARKER, discovery_root, sidecar_folder
from discovery.loop.services.transfer import STATE_FILES, loop_export

from .factories import BookFactory
from .loop_scenes import (
    ask_gate,
    decide,
    start_discovery,
    started_book,  # noqa: F401 (the book, its discovery started)
    trace,
    url,
)

pytestmark = pytest.mark.django_db


def _material(book, sol_api, luna_api, terra_api) -> None:
    """Proposed loop material of every kind: a plan node with candidates, slots, a question, a trace."""
    root = sol_api.get(url(book, "/nodes")).json()["items"][0]
    node = sol_api.post(
        url(book, "/nodes"),
        {"parent_id": root["id"], "intent": "the sister", "assumption": "readers care",
         "kill_condition": "beta readers shrug", "activity": "read chapter 3 aloud"},
    ).json()  # fmt: skip
    for altitude, mechanic in (("plotline", "quest"), ("subplot", "romance engine")):
        terra_api.post(
            url(book, f"/nodes/{node['id']}/candidates"),
            {"altitude": altitude, "mechanic": mechanic, "shape": "s", "riskiest_assumption": "r"},
        )
    luna_api.post(
        url(book, "/artifacts"),
        {"slug": "decision-brief", "type": "decision-brief", "content": {"success_metrics": ["culprit by ch. 20"]}},
    )
    luna_api.post(
        url(book, "/artifacts"),
        {"slug": "beat", "type": "scene-card", "parent": "decision-brief", "content": {"é": "ünïcode"}},
    )
    luna_api.post(url(book, "/questions"), {"question": "Which tide?", "target_discipline": "research"})
    trace(
        sol_api,
        book,
        [("premise", "premise"), ("sq", "story-question"), ("ch1", "chapter")],
        [("premise", "sq"), ("sq", "ch1")],
    )


@pytest.fixture
def loop_book(book, sol_api, luna_api, terra_api):
    _material(book, sol_api, luna_api, terra_api)
    return book


@pytest.fixture
def root(tmp_path, settings) -> Path:
    settings.NOVELGRAPH_DISCOVERY_ROOT = str(tmp_path / "discovery")
    return tmp_path / "discovery"


def _tree(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


def test_loop_export_writes_the_seed_layout_with_the_zips_files_and_screens(loop_book, sol_api, author_api, root):
    r = ask_gate(sol_api, loop_book, "G0", artifacts=["decision-brief"])
    decide(author_api, loop_book, r.json()["approval_id"], "approve-with-constraint", constraint="one city only")
    assert not root.exists()
    out = io.StringIO()
    call_command("loop_export", "--book", str(loop_book.pk), stdout=out)
    folder = root / loop_book.slug
    assert str(folder) in out.getvalue()
    names = _tree(folder)
    assert {f"_state/{n}.json" for n in STATE_FILES} <= names
    # The committed artifacts (what the author ratified) stand beside _state; the pictures are in screens/.
    assert "scope-boundary.json" in names and "decision-brief.json" not in names
    assert {"screens/plan-tree.svg", "screens/traceability.svg"} <= names
    # The folder holds the zip's documents, byte for byte.
    archive = zipfile.ZipFile(io.BytesIO(loop_export(book=loop_book)))
    assert {f"{loop_book.slug}/{n}" for n in names if not n.startswith("screens/")} == set(archive.namelist())
    for member in archive.namelist():
        assert (root / member).read_bytes() == archive.read(member)
    for picture in ("plan-tree", "traceability"):
        svg = (folder / "screens" / f"{picture}.svg").read_text()
        assert svg.startswith("<svg") and "</svg>" in svg
    assert "sq" in (folder / "screens" / "traceability.svg").read_text()
    meta = json.loads((folder / "_state" / "meta.json").read_text())
    assert meta["schema_version"] == "0.1" and meta["gate"] == "G0"


def _canon(doc, slug: str):
    """The document with each id (a UUID) replaced by its order of first appearance, and the book's slug by a
    placeholder: ids a fresh book gives anew (those the source still holds) compare by what they point at."""
    seen: dict[str, str] = {}

    def walk(value):
        if isinstance(value, dict):
            return {k: walk(value[k]) for k in sorted(value)}
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, str):
            try:
                uuid.UUID(value)
            except ValueError:
                return value.replace(slug, "<slug>")
            return seen.setdefault(value, f"#{len(seen)}")
        return value

    return walk(doc)


def _state_files(folder: Path, slug: str) -> dict:
    return {n: _canon(json.loads((folder / "_state" / f"{n}.json").read_text()), slug) for n in STATE_FILES}


def test_importing_the_folder_into_a_fresh_book_gives_the_same_state(loop_book, author, root):
    call_command("loop_export", "--book", str(loop_book.pk), stdout=io.StringIO())
    fresh = BookFactory(owner=author, title="Book two")
    start_discovery(fresh)
    out = io.StringIO()
    call_command("loop_import", "--book", str(fresh.pk), "--from", str(root / loop_book.slug), stdout=out)
    assert "imported from" in out.getvalue() and "artifacts 2" in out.getvalue()
    call_command("loop_export", "--book", str(fresh.pk), stdout=io.StringIO())
    source = _state_files(root / loop_book.slug, loop_book.slug)
    copy = _state_files(root / fresh.slug, fresh.slug)
    assert source["blackboard"]["artifacts"] and source["plan-tree"]["nodes"][1]["candidates"]
    # The export of the fresh book is the source's: every state file but the decision log, which is each
    # book's own chain (the fresh one holds the author's import row).
    for name in STATE_FILES:
        if name != "decision-log":
            assert copy[name] == source[name], name
    assert [e["subject_type"] for e in copy["decision-log"]["entries"]][-1:] == ["loop-import"]
    assert sorted(_tree(root / fresh.slug)) == sorted(_tree(root / loop_book.slug))


def test_the_folder_import_is_the_zip_import_with_its_rules(loop_book, sol_api, author_api, root, tmp_path):
    call_command("loop_export", "--book", str(loop_book.pk), stdout=io.StringIO())
    folder = root / loop_book.slug
    # The same validation as the zip: a bad record is refused naming its field, nothing lands.
    board = folder / "_state" / "blackboard.json"
    good = board.read_bytes()
    doc = json.loads(good)
    doc["artifacts"][0]["version"] = -3
    board.write_text(json.dumps(doc))
    fresh = BookFactory(owner=loop_book.owner, title="Book three")
    start_discovery(fresh)
    with pytest.raises(CommandError, match=r"blackboard\.artifacts\[0\]\.version"):
        call_command("loop_import", "--book", str(fresh.pk), "--from", str(folder))
    assert not BlackboardArtifact.objects.filter(book=fresh).exists()
    board.write_bytes(good)
    # A loop that has started refuses it, as it refuses the zip.
    r = ask_gate(sol_api, loop_book, "G0", artifacts=["decision-brief"])
    decide(author_api, loop_book, r.json()["approval_id"], "approve")
    with pytest.raises(CommandError, match="has not started"):
        call_command("loop_import", "--book", str(loop_book.pk), "--from", str(folder))
    with pytest.raises(CommandError, match="no _state folder"):
        call_command("loop_import", "--book", str(fresh.pk), "--from", str(tmp_path / "nowhere"))
    with pytest.raises(CommandError, match="no book"):
        call_command("loop_export", "--book", "not-a-book")


def test_the_root_is_the_setting_then_the_default_then_the_marker(tmp_path, settings, monkeypatch):
    var = tmp_path / "var"
    work = tmp_path / "project" / "sub"
    work.mkdir(parents=True)
    marked = tmp_path / "project"
    (marked / MARKER).write_text("")
    monkeypatch.chdir(work)
    settings.VAR_DIR = var
    # 1. The setting wins over both.
    settings.NOVELGRAPH_DISCOVERY_ROOT = str(tmp_path / "configured")
    var.mkdir()
    assert discovery_root() == tmp_path / "configured"
    # 2. No setting: the default under var/, while var/ exists (even with a marker above the working folder).
    settings.NOVELGRAPH_DISCOVERY_ROOT = ""
    assert discovery_root() == var / "discovery"
    # 3. No var/: the nearest folder above the working folder that holds the marker.
    var.rmdir()
    assert discovery_root() == marked
    assert discovery_root(cwd=work) == marked
    # 4. No marker either: the default, to be created on the first write.
    (marked / MARKER).unlink()
    assert discovery_root() == var / "discovery"
    assert not var.exists()


def test_nothing_is_created_until_something_is_written(loop_book, author_browser, root, settings, tmp_path):
    # Resolving the root, naming the book's folder and showing the loop page create nothing.
    assert sidecar_folder(loop_book) == root / loop_book.slug
    page = author_browser.get(f"/books/{loop_book.pk}/loop/")
    assert page.status_code == 200
    html = page.content.decode()
    assert f"/api/v1/books/{loop_book.pk}/loop/export" in html and str(root / loop_book.slug) in html
    assert not root.exists()
    # An import that is refused writes nothing either.
    with pytest.raises(CommandError):
        call_command("loop_import", "--book", str(loop_book.pk))
    assert not root.exists()
    call_command("loop_export", "--book", str(loop_book.pk), stdout=io.StringIO())
    assert (root / loop_book.slug / "_state" / "meta.json").is_file()
    assert sorted(p.name for p in root.iterdir()) == [loop_book.slug]
