"""Forms of the account pages that Django's auth views use, changed only so their e-mail goes the product's way."""

from __future__ import annotations

import logging

from django.contrib.auth.forms import PasswordResetForm
from django.urls import reverse

from .mail import mail_send, site_url

logger = logging.getLogger(__name__)


class PasswordResetByMailForm(PasswordResetForm):
    """Django's "forgot your password" form (who gets a link is still Django's rule: an active account with a
    usable password and that address), sending its link through :func:`novelgraph.core.mail.mail_send` with
    ``templates/email/password_reset*``, on the same bases as every other message.

    The link points at ``NOVELGRAPH_SITE_URL``, not at the Host header of the request that asked for it."""

    def send_mail(
        self,
        subject_template_name,
        email_template_name,
        context,
        from_email,
        to_email,
        html_email_template_name=None,
    ) -> None:
        person = context["user"]
        link = site_url() + reverse("password_reset_confirm", args=[context["uid"], context["token"]])
        try:
            mail_send(to=[to_email], template="password_reset", context={"person": person, "link": link})
        except OSError:
            # As Django does: the page says "check your e-mail" either way, so nobody learns which addresses exist.
            logger.exception("the password-reset e-mail to account %s was not sent", person.pk)
