"""Seed the loop's roster (LOOP.md, seed 002): the roster is data, not code paths."""

from django.db import migrations

from discovery.loop.roster import ROSTER, seed_roster


def seed(apps, schema_editor):
    seed_roster(apps.get_model("loop", "RosterEntry"), overwrite=True)


def unseed(apps, schema_editor):
    apps.get_model("loop", "RosterEntry").objects.filter(slug__in=[r[0] for r in ROSTER]).delete()


class Migration(migrations.Migration):
    dependencies = [("loop", "0001_initial")]
    operations = [migrations.RunPython(seed, unseed)]
