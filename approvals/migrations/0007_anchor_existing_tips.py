"""Upgrade path for logs written before the tip anchor (issue 12, item 9): anchor each book's current tip.

From here on a cut below today's tip is detected. Entries written before this version carry no
``canon`` record in their detail: verification still asks that every approved subject has an
approving entry, and checks the content of those approved from now on (README, "The decision log").
"""

from django.db import migrations


def anchor_tips(apps, schema_editor):
    from approvals.anchor import anchor_append, anchor_tip

    Entry = apps.get_model("approvals", "DecisionLogEntry")
    conn = schema_editor.connection
    tips = {}
    for book_id, sequence, hash_hex in Entry.objects.using(conn.alias).order_by("book_id", "sequence").values_list(
        "book_id", "sequence", "hash"
    ):
        tips[book_id] = (sequence, hash_hex)
    for book_id, (sequence, hash_hex) in tips.items():
        if anchor_tip(book_id, conn) is None:
            anchor_append(book_id, sequence, hash_hex, conn)


class Migration(migrations.Migration):
    dependencies = [("approvals", "0006_decision_log_seal_key_id")]

    operations = [migrations.RunPython(anchor_tips, migrations.RunPython.noop, elidable=True)]
