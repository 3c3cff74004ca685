from django.db import migrations

from novelgraph.core.db import AppendOnly


class Migration(migrations.Migration):
    dependencies = [("discovery", "0001_initial")]

    operations = [
        AppendOnly("discovery_scratchpadentry"),
        AppendOnly("discovery_contextdossier"),
    ]
