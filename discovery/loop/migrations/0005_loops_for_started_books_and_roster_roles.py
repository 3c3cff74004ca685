"""Data: every book whose discovery has started has its loop; the roster's G2 lenses get the roles that can do them.

1. Reads no longer create a loop (issue 13): the loop is made when a book's discovery starts. A book whose
   discovery started before that change and that has no loop yet gets one here, at G0 with its root node,
   exactly as ``loop_ensure`` makes it. Books whose discovery has not started get theirs when it starts.
2. The canon-integrity lens checks a book against approved series canon, so its role must read series
   canon: Terra (Luna has no series:read). The two required G2 reviews are filed by distinct lenses, so
   reader-trust moves to Luna (it reads the book's own discovery, which Luna may).
"""

from django.db import migrations

ROLES = {"canon-integrity": "terra", "reader-trust": "luna"}


def forward(apps, schema_editor):
    Book = apps.get_model("discovery", "Book")
    Session = apps.get_model("discovery", "DiscoverySession")
    LoopMeta = apps.get_model("loop", "LoopMeta")
    PlanNode = apps.get_model("loop", "PlanNode")
    RosterEntry = apps.get_model("loop", "RosterEntry")
    started = Session.objects.values_list("book_id", flat=True).distinct()
    for book in Book.objects.filter(pk__in=started).exclude(pk__in=LoopMeta.objects.values_list("book_id", flat=True)):
        LoopMeta.objects.create(book=book)
        if not PlanNode.objects.filter(book=book, is_root=True).exists():
            PlanNode.objects.create(
                book=book, is_root=True, depth=0, intent=(book.premise or book.title)[:5000], altitude="book"
            )
    for slug, role in ROLES.items():
        RosterEntry.objects.filter(slug=slug).update(agent_role=role)


def backward(apps, schema_editor):
    RosterEntry = apps.get_model("loop", "RosterEntry")
    RosterEntry.objects.filter(slug="canon-integrity").update(agent_role="luna")
    RosterEntry.objects.filter(slug="reader-trust").update(agent_role="terra")


class Migration(migrations.Migration):
    dependencies = [
        ("loop", "0004_successor_resolved_by"),
        ("discovery", "0006_session_questions_and_entry_provenance"),
    ]

    operations = [migrations.RunPython(forward, backward)]
