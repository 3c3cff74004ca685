"""Issue 28, the manuscript: codex entries (claims name their subject's entry), chapters the author adds,
retitles and moves, and chapter text stored as append-only revisions, compared and uploaded."""

from __future__ import annotations

import io

import docx
import pytest
from django.core.exceptions import ValidationError
from django.db import DatabaseError, transaction

from discovery.models import ChapterRevision, KnowledgeClaim

pytestmark = pytest.mark.django_db


def propose(api, book, subject, predicate, value, **story):
    made = api.post(
        "/claims",
        {
            "scope": "book",
            "scope_id": str(book.pk),
            "subject": subject,
            "predicate": predicate,
            "value": value,
            "provenance": "agent-inferred",
            **story,
        },
    )
    assert made.status_code == 201, made.content
    return made.json()["id"]


def test_the_author_keeps_codex_entries_and_claims_name_their_entry(author_api, sol_api, editor_api, book):
    url = f"/books/{book.pk}/codex/entries"
    made = author_api.post(url, {"name": "Father Aubrey", "kind": "person", "aliases": ["Aubrey", "the chaplain"]})
    assert made.status_code == 201, made.content
    entry = made.json()
    assert entry["aliases"] == ["Aubrey", "the chaplain"]
    # A claim about an alias names the entry; a claim about a new subject makes an unsorted entry.
    by_alias = propose(sol_api, book, "the chaplain", "hears", "the confession")
    propose(sol_api, book, "Greyhaven", "is", "a harbour town")
    assert str(KnowledgeClaim.objects.get(pk=by_alias).entry_id) == entry["id"]
    listed = {e["name"]: e for e in author_api.get(url).json()["items"]}
    assert listed["Father Aubrey"]["claim_ids"] == [by_alias]
    assert listed["Greyhaven"]["kind"] == "unsorted"
    # The author sorts and renames it; a taken name is a 422 naming the field; others may not write.
    edited = author_api.patch(f"{url}/{listed['Greyhaven']['id']}", {"kind": "place", "aliases": ["the harbour"]})
    assert edited.status_code == 200 and edited.json()["kind"] == "place"
    taken = author_api.post(url, {"name": "Hale", "aliases": ["Aubrey"]})
    assert taken.status_code == 422 and taken.json()["field"] == "aliases"
    bad_kind = author_api.post(url, {"name": "Hale", "kind": "mood"})
    assert bad_kind.status_code == 422
    # Sol's entry is only proposed (tests/test_codex_entry_proposals.py); an editor adds none.
    proposed = sol_api.post(url, {"name": "Hale"})
    assert proposed.status_code == 201 and proposed.json()["status"] == "proposed"
    assert editor_api.post(url, {"name": "Hale"}).status_code == 403
    assert sol_api.get(url).status_code == 200


def test_the_author_adds_retitles_and_moves_chapters_before_hand_off(author_api, sol_api, book):
    url = f"/books/{book.pk}/chapters"
    for title in ("The Bell", "The Tide", "The Clock"):
        assert author_api.post(url, {"title": title}).status_code == 201
    first = author_api.post(url, {"title": "Prologue", "number": 1})
    assert first.json()["number"] == 1

    def titles():
        return [c["title"] for c in author_api.get(url).json()["items"]]

    assert titles() == ["Prologue", "The Bell", "The Tide", "The Clock"]
    moved = author_api.patch(f"{url}/4", {"number": 2, "title": "The Clock Stops"})
    assert moved.status_code == 200 and moved.json()["number"] == 2
    assert titles() == ["Prologue", "The Clock Stops", "The Bell", "The Tide"]
    assert author_api.patch(f"{url}/9", {"title": "x"}).status_code == 404
    out_of_range = author_api.patch(f"{url}/1", {"number": 7})
    assert out_of_range.status_code == 422 and out_of_range.json()["field"] == "number"
    assert author_api.post(url, {"title": "  "}).status_code == 422
    assert sol_api.post(url, {"title": "Mine"}).status_code == 403


def test_chapter_text_is_stored_as_append_only_revisions_and_compared(author_api, luna_api, book):
    author_api.post(f"/books/{book.pk}/chapters", {"title": "The Bell"})
    url = f"/books/{book.pk}/chapters/1"
    one = author_api.put(f"{url}/text", {"text": "The bell rang twice at dawn."})
    assert one.status_code == 201 and one.json()["revision"] == 1 and one.json()["words"] == 6
    two = author_api.put(f"{url}/text", {"text": "The bell rang three times at dawn, and Mara woke."})
    assert two.json()["revision"] == 2
    assert (
        author_api.put(f"{url}/text", {"text": "The bell rang three times at dawn, and Mara woke."}).json()["revision"]
        == 2
    )  # the same text stores nothing new
    assert [r["words"] for r in author_api.get(f"{url}/revisions").json()["items"]] == [6, 10]
    assert author_api.get(f"{url}/text").json()["text"].startswith("The bell rang three")
    assert luna_api.get(f"{url}/text", revision=1).json()["text"] == "The bell rang twice at dawn."
    compared = author_api.get(f"{url}/compare", older=1, newer=2).json()
    assert compared["words_removed"] == 1 and compared["words_added"] == 5
    assert any(line.startswith("+The bell rang three") for line in compared["diff"])
    assert luna_api.put(f"{url}/text", {"text": "Mine."}).status_code == 403
    assert author_api.put(f"/books/{book.pk}/chapters/5/text", {"text": "x"}).status_code == 404
    assert author_api.put(f"{url}/text", {"words": "x"}).json()["field"].endswith("text")
    # Append-only in the ORM and in the database.
    revision = ChapterRevision.objects.get(chapter__book=book, number=1)
    revision.text = "changed"
    with pytest.raises(ValidationError):
        revision.save()
    with pytest.raises(DatabaseError), transaction.atomic():
        ChapterRevision.objects.filter(pk=revision.pk).update(text="changed")
    with pytest.raises(DatabaseError), transaction.atomic():
        ChapterRevision.objects.filter(pk=revision.pk).delete()


def _upload(api, book, name, data: bytes):
    return api.client.post(
        f"/api/v1/books/{book.pk}/manuscript", {"file": _named(name, data)}, HTTP_AUTHORIZATION=f"Bearer {api.key}"
    )


def _named(name, data):
    handle = io.BytesIO(data)
    handle.name = name
    return handle


def test_a_manuscript_upload_is_split_at_its_chapter_headings(author_api, book):
    markdown = "# Chapter 1: The Bell\n\nThe bell rang.\n\n# Chapter 2: The Tide\n\nThe tide came in.\n"
    done = _upload(author_api, book, "draft.md", markdown.encode())
    assert done.status_code == 201, done.content
    chapters = author_api.get(f"/books/{book.pk}/chapters").json()["items"]
    assert [(c["number"], c["title"]) for c in chapters] == [(1, "The Bell"), (2, "The Tide")]
    assert author_api.get(f"/books/{book.pk}/chapters/2/text").json()["text"] == "The tide came in."
    plain = _upload(author_api, book, "draft.txt", b"Chapter One\nThe bell rang again.\nCHAPTER TWO\nLow tide.\n")
    assert plain.status_code == 201
    assert author_api.get(f"/books/{book.pk}/chapters/1/text").json()["revision"] == 2
    document = docx.Document()
    document.add_heading("Chapter 1: The Bell", level=1)
    document.add_paragraph("A third bell.")
    document.add_heading("Chapter 2: The Tide", level=1)
    document.add_paragraph("A third tide.")
    buffer = io.BytesIO()
    document.save(buffer)
    assert _upload(author_api, book, "draft.docx", buffer.getvalue()).status_code == 201
    assert author_api.get(f"/books/{book.pk}/chapters/2/text").json()["text"] == "A third tide."
    for name, data in (("draft.pdf", b"%PDF"), ("draft.docx", b"not a zip"), ("draft.md", b"\xff\xfe\x00")):
        refused = _upload(author_api, book, name, data)
        assert refused.status_code == 422 and refused.json()["field"] == "file", (name, refused.content)


def test_the_chapter_pages_show_text_findings_and_revisions_and_take_the_authors_forms(
    author_browser, editor_browser, author_api, book
):
    from discovery.models import ChapterRevision, ContinuityFinding

    chapters = f"/books/{book.pk}/chapters/"
    assert author_browser.post(chapters, {"title": "The Bell"}).status_code == 302
    blank = author_browser.post(chapters, {"title": " "})
    assert blank.status_code == 422 and b"form-error" in blank.content
    saved = author_browser.post(f"{chapters}1/", {"text": "Mara rang the bell for Hale."})
    assert saved.status_code == 302
    revision = ChapterRevision.objects.get(chapter__book=book, number=1)
    finding = ContinuityFinding.objects.create(
        chapter=revision.chapter, revision=revision, kind="not-in-canon", key="name:hale",
        span_start=23, span_end=27, quote="Hale", message="“Hale” is named here, and no codex entry knows it.",
    )  # fmt: skip
    page = author_browser.get(f"{chapters}1/").content.decode()
    assert f'<mark id="span-{finding.pk}" title="“Hale” is named here' in page and ">Hale</mark>" in page
    assert "Revision 1 · 6 words" in page and '<button type="submit">Settle</button>' in page
    assert '<button type="submit">Settle</button>' not in editor_browser.get(f"{chapters}1/").content.decode()
    url = f"{chapters}1/findings/{finding.pk}/settle/"
    refused = author_browser.post(url, {"resolution": "intentional"})
    assert refused.status_code == 422 and b"form-error" in refused.content
    assert editor_browser.post(url, {"resolution": "intentional", "rationale": "x"}).status_code == 403
    assert author_browser.post(url, {"resolution": "intentional", "rationale": "A passer-by."}).status_code == 302
    finding.refresh_from_db()
    assert finding.status == "intentional"
    # The codex page's entry form.
    added = author_browser.post(
        f"/books/{book.pk}/codex/entries/", {"name": "Hale", "kind": "person", "aliases": "the inspector, Hale"}
    )
    assert added.status_code == 302
    codex = author_browser.get(f"/books/{book.pk}/codex/").content.decode()
    assert "<strong>Hale</strong>" in codex and "also the inspector" in codex


def test_the_author_runs_the_check_and_compares_revisions_from_the_chapter_page(
    author_browser, editor_browser, author_api, book
):
    from discovery.agents.models import AgentRun

    chapters = f"/books/{book.pk}/chapters/"
    assert author_api.post(f"/books/{book.pk}/discovery").status_code in (200, 201)
    author_browser.post(chapters, {"title": "The Bell"})
    check = f"{chapters}1/check/"
    # No text yet: the button's refusal shows inline, and nothing is queued.
    refused = author_browser.post(check)
    assert refused.status_code == 409 and b"no text yet" in refused.content
    author_browser.post(f"{chapters}1/", {"text": "Mara rang the bell."})
    author_browser.post(f"{chapters}1/", {"text": "Mara rang the old bell twice."})
    page = author_browser.get(f"{chapters}1/").content.decode()
    assert ">Run the check</button>" in page and "Not checked yet." in page
    assert ">Run the check</button>" not in editor_browser.get(f"{chapters}1/").content.decode()
    assert editor_browser.post(check).status_code == 403
    assert author_browser.post(check).status_code == 302
    run = AgentRun.objects.get(book=book, task="continuity")
    assert run.role == "luna" and run.input == {"chapter": 1, "revision": 2}
    status = author_browser.get(f"{check}status/", HTTP_HX_REQUEST="true").content.decode()
    assert 'data-status="queued"' in status and "every 1s" in status
    # Compare: words added and removed, and the lines that changed.
    compared = author_browser.get(f"{chapters}1/", {"older": 1, "newer": 2}).content.decode()
    assert "2 words added" in compared and "0 words removed" in compared
    # The changed line shows which words changed: "the bell." became "the old bell twice."
    assert "Removed: </span>Mara rang the <del>bell.</del>" in compared
    assert "Added: </span>Mara rang the <ins>old bell twice.</ins>" in compared
    wrong = author_browser.get(f"{chapters}1/", {"older": 1, "newer": 9}).content.decode()
    assert 'id="compare-error"' in wrong and "revision not found" in wrong
