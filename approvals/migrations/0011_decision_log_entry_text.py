"""The decision log stores each entry once, as the canonical text its hash covers (issue 19).

``entry`` holds the text; ``sequence``, ``ts``, ``gate``, ``decision``, ``subject_type``, ``subject_id``,
``ratified_by``, ``reversibility_class``, ``rationale``, ``detail`` and ``prev_hash`` become columns the
database generates from it. Existing rows get their text from their columns through the recipe
(``approvals.chain``): a row someone changed before this migration keeps a text its hash does not match, so
it still fails verification.

Reversible: the columns are written back from the text, then the text is dropped.
"""

import json
from datetime import UTC, datetime

from django.db import migrations, models
from django.db.models import Q

import approvals.models
from approvals.chain import chain_fields, entry_text
from novelgraph.core.db import AppendOnly, enum_check, install_append_only, remove_append_only

TABLE = "approvals_decisionlogentry"
RECIPE = (
    "sequence",
    "ts",
    "gate",
    "decision",
    "subject_type",
    "subject_id",
    "ratified_by",
    "reversibility_class",
    "rationale",
    "detail",
    "prev_hash",
)
BATCH = 1000


def guard_off(apps, schema_editor):
    remove_append_only(schema_editor.connection, [TABLE])


def guard_on(apps, schema_editor):
    install_append_only(schema_editor.connection, [TABLE])


def texts_from_columns(apps, schema_editor):
    Entry = apps.get_model("approvals", "DecisionLogEntry")
    rows = Entry.objects.order_by("book_id", "sequence").only("pk", "book_id", *RECIPE)
    batch = []
    for row in rows.iterator(chunk_size=BATCH):
        row.entry = entry_text(chain_fields(book_id=row.book_id, **{name: getattr(row, name) for name in RECIPE}))
        batch.append(row)
        if len(batch) == BATCH:
            Entry.objects.bulk_update(batch, ["entry"])
            batch = []
    Entry.objects.bulk_update(batch, ["entry"])


def columns_from_texts(apps, schema_editor):
    Entry = apps.get_model("approvals", "DecisionLogEntry")
    batch = []
    for row in Entry.objects.only("pk", "entry").iterator(chunk_size=BATCH):
        fields = json.loads(row.entry)
        for name in RECIPE:
            setattr(row, name, fields[name])
        row.ts = datetime.strptime(fields["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
        batch.append(row)
        if len(batch) == BATCH:
            Entry.objects.bulk_update(batch, RECIPE)
            batch = []
    Entry.objects.bulk_update(batch, RECIPE)


# The recipe's columns as they were, nullable.
NULLABLE = {
    "sequence": models.PositiveIntegerField(null=True),
    "ts": models.DateTimeField(null=True),
    "decision": models.CharField(max_length=30, choices=approvals.models.Verdict.choices, null=True),
    "subject_type": models.CharField(max_length=30, null=True),
    "subject_id": models.CharField(max_length=64, null=True),
    "ratified_by": models.CharField(max_length=200, null=True),
    "reversibility_class": models.CharField(max_length=20, choices=approvals.models.Reversibility.choices, null=True),
    "rationale": models.TextField(null=True),
    "prev_hash": models.CharField(max_length=64, null=True),
}


def generated(key, output_field):
    return models.GeneratedField(
        expression=approvals.models.EntryValue(key, output_field=output_field),
        output_field=output_field,
        db_persist=True,
    )


CONSTRAINTS = (
    models.UniqueConstraint(fields=("book", "sequence"), name="decisionlog_unique_sequence"),
    models.UniqueConstraint(fields=("book", "prev_hash"), name="decisionlog_no_fork"),
    models.CheckConstraint(condition=Q(sequence__gte=1), name="decisionlog_sequence_positive"),
    # Every field of the recipe is in the entry's text (a generated column is NULL where a key is missing).
    models.CheckConstraint(
        condition=Q(
            sequence__isnull=False,
            ts__isnull=False,
            decision__isnull=False,
            subject_type__isnull=False,
            subject_id__isnull=False,
            ratified_by__isnull=False,
            reversibility_class__isnull=False,
            rationale__isnull=False,
            detail__isnull=False,
            prev_hash__isnull=False,
        ),
        name="decisionlog_entry_complete",
    ),
    enum_check("decision", approvals.models.Verdict, "decisionlog_decision_valid"),
    enum_check("reversibility_class", approvals.models.Reversibility, "decisionlog_reversibility_valid"),
    models.CheckConstraint(condition=~Q(rationale=""), name="decisionlog_rationale_required"),
    models.CheckConstraint(
        condition=Q(ratified_by_user__isnull=False) | Q(ratified_by__startswith="controller:"),
        name="decisionlog_ratified_by_person_or_controller",
    ),
)


class Migration(migrations.Migration):
    dependencies = [("approvals", "0010_decision_list_items")]

    operations = [
        migrations.RunPython(guard_off, guard_on),
        migrations.AddField("decisionlogentry", "entry", models.TextField(default="")),
        migrations.RunPython(texts_from_columns, migrations.RunPython.noop),
        migrations.RemoveIndex("decisionlogentry", "decisionlog_subject"),
        *(
            migrations.RemoveConstraint("decisionlogentry", constraint.name)
            for constraint in CONSTRAINTS
            if constraint.name != "decisionlog_entry_complete"
        ),
        # Nullable first, so that the way back can add them to a filled table before filling them.
        *(migrations.AlterField("decisionlogentry", name, field) for name, field in NULLABLE.items()),
        migrations.RunPython(migrations.RunPython.noop, columns_from_texts),
        *(migrations.RemoveField("decisionlogentry", name) for name in RECIPE),
        migrations.AlterField("decisionlogentry", "entry", models.TextField()),
        migrations.AddField("decisionlogentry", "sequence", generated("sequence", models.PositiveIntegerField())),
        migrations.AddField("decisionlogentry", "ts", generated("ts", models.DateTimeField())),
        migrations.AddField(
            "decisionlogentry",
            "gate",
            generated(
                "gate",
                models.CharField(max_length=4, choices=approvals.models.Gate.choices, null=True, blank=True),
            ),
        ),
        migrations.AddField(
            "decisionlogentry",
            "decision",
            generated("decision", models.CharField(max_length=30, choices=approvals.models.Verdict.choices)),
        ),
        migrations.AddField(
            "decisionlogentry", "subject_type", generated("subject_type", models.CharField(max_length=30))
        ),
        migrations.AddField("decisionlogentry", "subject_id", generated("subject_id", models.CharField(max_length=64))),
        migrations.AddField(
            "decisionlogentry", "ratified_by", generated("ratified_by", models.CharField(max_length=200))
        ),
        migrations.AddField(
            "decisionlogentry",
            "reversibility_class",
            generated(
                "reversibility_class",
                models.CharField(max_length=20, choices=approvals.models.Reversibility.choices),
            ),
        ),
        migrations.AddField("decisionlogentry", "rationale", generated("rationale", models.TextField())),
        migrations.AddField("decisionlogentry", "detail", generated("detail", models.JSONField())),
        migrations.AddField("decisionlogentry", "prev_hash", generated("prev_hash", models.CharField(max_length=64))),
        *(migrations.AddConstraint("decisionlogentry", constraint) for constraint in CONSTRAINTS),
        migrations.AddIndex(
            "decisionlogentry", models.Index(fields=["subject_type", "subject_id"], name="decisionlog_subject")
        ),
        AppendOnly(TABLE),
    ]
