"""The curated Fair-play and Promise-and-payoff entries gain the topic "twist" (and "surprise").

Any-word search finds a natural question such as "how do I make a twist feel earned?" through
these topics. Seed topics a store lacks are appended; topics staff added are kept.
"""

from django.db import migrations

from library.seed import curated_topics_complete


def complete(apps, schema_editor):
    curated_topics_complete(apps.get_model("library", "KnowledgeSource"), apps.get_model("library", "KnowledgeChunk"))


class Migration(migrations.Migration):
    dependencies = [("library", "0003_search_index")]

    operations = [migrations.RunPython(complete, migrations.RunPython.noop)]
