"""Signing in: the login page (password and single sign-on) and single sign-on's two views.

mozilla-django-oidc's views, made to answer every failure (a forged or replayed state, a
nonce that does not match, the provider's refusal or silence, a deactivated member) with the
login page and a message saying what happened, never an error page.
"""

import logging

import jwt
import requests
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.views import LoginView
from django.core.exceptions import SuspiciousOperation
from django.shortcuts import redirect
from django.views.generic import View
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from profiles.team.sso import SsoRefused, SsoUnavailable, sso_enabled, sso_endpoints

logger = logging.getLogger(__name__)


def _provider() -> str:
    return settings.OIDC_PROVIDER_NAME


def _refused(request, message: str):
    messages.error(request, message)
    return redirect(settings.LOGIN_URL)


class SignInView(LoginView):
    """Django's login page, offering single sign-on when configured and refusing a password
    when ``PASSWORD_SIGN_IN`` is off."""

    def get_context_data(self, **kwargs):
        return super().get_context_data(
            sso_enabled=sso_enabled(),
            sso_provider_name=_provider(),
            password_sign_in=settings.PASSWORD_SIGN_IN,
            **kwargs,
        )

    def post(self, request, *args, **kwargs):
        if not settings.PASSWORD_SIGN_IN:
            messages.error(
                request,
                f"Password sign-in is switched off: sign in with {_provider()}."
                if sso_enabled()
                else "Password sign-in is switched off.",
            )
            return self.render_to_response(self.get_context_data(), status=403)
        return super().post(request, *args, **kwargs)


class SsoStartView(OIDCAuthenticationRequestView):
    """Send the browser to the provider, with a new state, nonce and PKCE verifier."""

    def __init__(self, **kwargs):
        View.__init__(self, **kwargs)  # the endpoints are read at each request, below

    def get(self, request):
        if not sso_enabled():
            return _refused(request, "Single sign-on is not configured.")
        try:
            self.OIDC_OP_AUTH_ENDPOINT = sso_endpoints().authorization
        except SsoUnavailable as error:
            logger.error("single sign-on unavailable: %s", error)
            return _refused(request, f"{_provider()} could not be reached: try again later.")
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        return super().get(request)


class SsoCallbackView(OIDCAuthenticationCallbackView):
    """Take the provider's answer: sign the member in, or say why not on the login page."""

    def get(self, request):
        if not sso_enabled():
            return _refused(request, "Single sign-on is not configured.")
        try:
            return super().get(request)
        except SsoRefused as refusal:
            return _refused(request, str(refusal))
        except (SuspiciousOperation, jwt.InvalidTokenError) as error:
            logger.warning("single sign-on refused: %s", error)
            return _refused(
                request,
                "The sign-in could not be verified (it may have been started in another "
                "window, or have expired): please sign in again.",
            )
        except (requests.RequestException, SsoUnavailable) as error:
            logger.error("single sign-on unavailable: %s", error)
            return _refused(request, f"{_provider()} could not be reached: try again later.")

    def login_failure(self):
        error = self.request.GET.get("error", "")
        if error:
            return _refused(
                self.request, f"{_provider()} did not sign you in ({error[:60]}): try again."
            )
        return _refused(self.request, "Single sign-on failed: please sign in again.")
