"""API keys moved to the novelgraph app (below the apps). The tables stay where they are."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("discovery", "0002_append_only")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="ApiKey")],
            database_operations=[],
        )
    ]
