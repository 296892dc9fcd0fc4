"""URL configuration: the studio, the admin and the API."""

from django.contrib import admin
from django.urls import include, path

from ctxstudio.health import healthz, readyz
from ctxstudio.metrics import metrics_view
from profiles.studio.views.sso import SignInView, SsoCallbackView, SsoStartView

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("metrics", metrics_view, name="metrics"),
    path("admin/", admin.site.urls),
    path("api/v1/", include("profiles.api.urls")),
    # The login page offers single sign-on: its two views (mozilla-django-oidc's names).
    path("accounts/login/", SignInView.as_view(), name="login"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("oidc/authenticate/", SsoStartView.as_view(), name="oidc_authentication_init"),
    path("oidc/callback/", SsoCallbackView.as_view(), name="oidc_authentication_callback"),
    path("", include("profiles.studio.urls")),
]
