"""URL configuration: the studio, the admin and the API."""

from django.contrib import admin
from django.urls import include, path

from ctxstudio.health import healthz, readyz
from profiles.studio.views.sso import SignInView

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("admin/", admin.site.urls),
    path("api/v1/", include("profiles.api.urls")),
    # The login page offers single sign-on (its views: OIDC_*_CLASS in the settings).
    path("accounts/login/", SignInView.as_view(), name="login"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("oidc/", include("mozilla_django_oidc.urls")),
    path("", include("profiles.studio.urls")),
]
