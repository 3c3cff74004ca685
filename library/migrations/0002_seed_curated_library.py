from django.db import migrations

from library.seed import seed_curated_library


def seed(apps, schema_editor):
    seed_curated_library(apps.get_model("library", "KnowledgeSource"), apps.get_model("library", "KnowledgeChunk"))


class Migration(migrations.Migration):
    dependencies = [("library", "0001_initial"), ("discovery", "0001_initial")]

    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
