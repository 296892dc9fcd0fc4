from django.urls import include, path

urlpatterns = [
    path("accounts/", include("django.contrib.auth.urls")),
    path("o/", include("oauth2_provider.urls", namespace="oauth2_provider")),
]
