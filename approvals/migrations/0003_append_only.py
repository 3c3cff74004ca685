from django.db import migrations

from novelgraph.core.db import AppendOnly


class Migration(migrations.Migration):
    dependencies = [("approvals", "0002_initial")]

    operations = [AppendOnly("approvals_decisionlogentry")]
