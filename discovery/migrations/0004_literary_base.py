"""The shared literary base is discovery's own record (it was seeded by the library's migration)."""

from django.db import migrations


def ensure(apps, schema_editor):
    apps.get_model("discovery", "KnowledgeBase").objects.get_or_create(
        scope="literary", owner_id="global", defaults={"name": "NovelGraph Literary Library"}
    )


class Migration(migrations.Migration):
    dependencies = [("discovery", "0003_apikey_moves_below_the_apps")]
    operations = [migrations.RunPython(ensure, migrations.RunPython.noop)]
