"""The decision log's detail as canonical text on every database (issue 19).

SQLite already stores a JSONField as text (with its JSON_VALID check): nothing changes there. PostgreSQL's
column becomes ``text`` (rows converted with ``detail::text``: jsonb's own spacing, which verification
re-encodes before hashing, so existing logs keep verifying; new rows are written in the recipe's canonical
form). Reversible: back to ``jsonb`` with ``detail::jsonb``.
"""

import approvals.models
from django.db import migrations

TABLE = "approvals_decisionlogentry"


def to_text(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f'ALTER TABLE "{TABLE}" ALTER COLUMN "detail" TYPE text USING "detail"::text')


def to_jsonb(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f'ALTER TABLE "{TABLE}" ALTER COLUMN "detail" TYPE jsonb USING "detail"::jsonb')


class Migration(migrations.Migration):
    dependencies = [("approvals", "0008_decision_log_subject_index")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="decisionlogentry",
                    name="detail",
                    field=approvals.models.CanonicalJSONTextField(
                        blank=True, default=dict, encoder=approvals.models.CanonicalJSONEncoder
                    ),
                )
            ],
            database_operations=[migrations.RunPython(to_text, to_jsonb)],
        )
    ]
