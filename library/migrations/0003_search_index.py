"""The library's search index, per database vendor (see library/search.py).

SQLite with FTS5: a contentless FTS5 table, its rowid map and sync triggers.
SQLite without FTS5: nothing (search falls back to LIKE). PostgreSQL: a weighted
tsvector column kept by a trigger, with a GIN index. Either way the chunks that
already exist (the curated seed of 0002) are indexed here.
"""

from django.db import migrations


def install(apps, schema_editor):
    from library.search import search_index_rebuild

    search_index_rebuild(using=schema_editor.connection.alias)


def remove(apps, schema_editor):
    from library.search import search_schema_remove

    search_schema_remove(schema_editor.connection)


class Migration(migrations.Migration):
    dependencies = [("library", "0002_seed_curated_library")]

    operations = [migrations.RunPython(install, remove)]
