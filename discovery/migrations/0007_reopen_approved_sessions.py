"""Approving a charter no longer closes the conversation (issue 13): the newest session of each
book that a charter approval had marked ``approved`` becomes ``active`` again, so its turns go on.
Older ``approved`` sessions are earlier rounds: they become ``closed`` (their history stays visible)."""

from django.db import migrations


def reopen(apps, schema_editor):
    DiscoverySession = apps.get_model("discovery", "DiscoverySession")
    newest_per_book = {}
    for session in DiscoverySession.objects.order_by("book_id", "-created_at").only("id", "book_id", "status"):
        newest_per_book.setdefault(session.book_id, session)
    open_books = set(
        DiscoverySession.objects.filter(status__in=["active", "charter-proposed"]).values_list("book_id", flat=True)
    )
    reopen_ids = [
        s.pk for book_id, s in newest_per_book.items() if s.status == "approved" and book_id not in open_books
    ]
    DiscoverySession.objects.filter(pk__in=reopen_ids).update(status="active")
    DiscoverySession.objects.filter(status="approved").update(status="closed")


class Migration(migrations.Migration):
    dependencies = [("discovery", "0006_session_questions_and_entry_provenance")]

    operations = [migrations.RunPython(reopen, migrations.RunPython.noop)]
