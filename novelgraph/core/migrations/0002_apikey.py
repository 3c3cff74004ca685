"""API keys now belong to the novelgraph app; the table created by discovery is kept as it is."""

import uuid

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("novelgraph", "0001_initial"),
        ("discovery", "0003_apikey_moves_below_the_apps"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="ApiKey",
                    fields=[
                        ("id", models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                        ("created_at", models.DateTimeField(auto_now_add=True, db_index=True)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                        ("name", models.CharField(blank=True, max_length=100)),
                        (
                            "role",
                            models.CharField(
                                choices=[
                                    ("author", "Personal key"),
                                    ("sol", "Sol (coordinator)"),
                                    ("terra", "Terra (specialist)"),
                                    ("luna", "Luna (bounded worker)"),
                                ],
                                max_length=10,
                            ),
                        ),
                        (
                            "prefix",
                            models.CharField(help_text="The first characters, to recognise a key in lists.", max_length=12),
                        ),
                        ("key_hash", models.CharField(editable=False, max_length=64, unique=True)),
                        ("revoked_at", models.DateTimeField(blank=True, null=True)),
                        ("last_used_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "owner",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="api_keys",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "books",
                            models.ManyToManyField(
                                blank=True, db_table="discovery_apikey_books", related_name="api_keys", to="discovery.book"
                            ),
                        ),
                    ],
                    options={
                        "verbose_name": "API key",
                        "ordering": ["-created_at"],
                        "db_table": "discovery_apikey",
                        "constraints": [
                            models.CheckConstraint(
                                condition=models.Q(("role__in", ["author", "sol", "terra", "luna"])),
                                name="apikey_role_valid",
                            )
                        ],
                    },
                ),
            ],
        )
    ]
