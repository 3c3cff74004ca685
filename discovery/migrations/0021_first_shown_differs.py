from django.db import migrations, models

KINDS = [
    ("reveal-too-early", "A fact shown before its chapter"),
    ("evidence-not-shown", "A reveal's evidence not shown before it"),
    ("out-of-time", "Present outside the chapters canon allows"),
    ("not-in-canon", "A name canon does not know"),
    ("contradicts-canon", "Says other than canon"),
    ("first-shown-differs", "A fact first shown later than planned"),
]


class Migration(migrations.Migration):
    dependencies = [
        ("discovery", "0020_codex_entry_status"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="continuityfinding",
            name="finding_kind_valid",
        ),
        migrations.AlterField(
            model_name="continuityfinding",
            name="kind",
            field=models.CharField(choices=KINDS, max_length=20),
        ),
        migrations.AddConstraint(
            model_name="continuityfinding",
            constraint=models.CheckConstraint(
                condition=models.Q(("kind__in", [kind for kind, _label in KINDS])),
                name="finding_kind_valid",
            ),
        ),
    ]
