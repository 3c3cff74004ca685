"""The curated library grows from five passages to the foundations and one shelf per genre (library/curated.py).

A store seeded before gets the shelves it lacks; one that has them (a fresh database, seeded by 0002) gets
nothing. The index triggers of 0003 index the new chunks as they are inserted.
"""

from django.db import migrations

from library.seed import seed_curated_library


def seed(apps, schema_editor):
    seed_curated_library(apps.get_model("library", "KnowledgeSource"), apps.get_model("library", "KnowledgeChunk"))


class Migration(migrations.Migration):
    dependencies = [("library", "0004_curated_twist_topics")]

    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
