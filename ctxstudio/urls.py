"""URL configuration: the studio, the admin and the API."""

from django.contrib import admin
from django.urls import include, path

from ctxstudio.health import healthz, readyz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("admin/", admin.site.urls),
    path("api/v1/", include("profiles.api.urls")),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("profiles.studio.urls")),
]
