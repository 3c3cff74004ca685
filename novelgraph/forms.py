"""Form fields shared by the admin and the pages."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError
from django.db import connections, models, router


class BoundedModelMultipleChoiceField(forms.ModelMultipleChoiceField):
    """Django's multiple-choice field, refusing an integer key its column cannot hold.

    Django 5.2 turns an out-of-range value in ``pk__in`` into a database error (SQLite
    "Python int too large", PostgreSQL "bigint out of range"): a 500 for a posted
    ``editors=9223372036854775808``. Here it is the field's usual "not a valid value" error.
    """

    def _check_values(self, value):
        model = self.queryset.model
        key = model._meta.get_field(self.to_field_name) if self.to_field_name else model._meta.pk
        if isinstance(key, models.IntegerField):
            connection = connections[router.db_for_read(model)]
            low, high = connection.ops.integer_field_range(key.get_internal_type())
            for pk in value or []:
                try:
                    number = int(str(pk).strip())
                except ValueError:
                    continue  # Django's own check reports it
                if (low is not None and number < low) or (high is not None and number > high):
                    raise ValidationError(
                        self.error_messages["invalid_pk_value"], code="invalid_pk_value", params={"pk": pk}
                    )
        return super()._check_values(value)
