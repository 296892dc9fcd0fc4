"""Routes of ``/api/v1/``. Collections end with a slash; objects do not, so an item path
(which may contain ``/``) maps to its URL unchanged. Each collection also answers without
its slash (POST cannot be redirected)."""

from django.urls import path
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from profiles.api import views
from profiles.api.imports import ImportJobView

app_name = "api"


def slashless(view_class):
    """Return the view for the URL without the trailing slash, left out of the schema."""
    return extend_schema(exclude=True)(type(view_class.__name__ + "Slashless", (view_class,), {}))


def collection(route: str, view_class, name: str) -> list:
    return [
        path(route + "/", view_class.as_view(), name=name),
        path(route, slashless(view_class).as_view()),
    ]


urlpatterns = [
    path("resolve", views.ResolveView.as_view(), name="resolve"),
    path("expand", views.ExpandView.as_view(), name="expand"),
    path("profiles/<str:key>/preview", views.PreviewView.as_view(), name="profile-preview"),
    *collection("consumers", views.ConsumerListView, "consumer-list"),
    path("consumers/<str:key>", views.ConsumerDetailView.as_view(), name="consumer-detail"),
    *collection("layers", views.LayerListView, "layer-list"),
    path("layers/<str:key>", views.LayerDetailView.as_view(), name="layer-detail"),
    *collection("layers/<str:key>/items", views.ItemListView, "item-list"),
    path("layers/<str:key>/items/<path:path>", views.ItemDetailView.as_view(), name="item-detail"),
    *collection("profiles", views.ProfileListView, "profile-list"),
    path("profiles/<str:key>", views.ProfileDetailView.as_view(), name="profile-detail"),
    path(
        "profiles/<str:key>/rules/<str:layer>", views.RuleDetailView.as_view(), name="rule-detail"
    ),
    *collection("scenarios", views.ScenarioListView, "scenario-list"),
    path("scenarios/<path:name>", views.ScenarioDetailView.as_view(), name="scenario-detail"),
    path("workspace", views.WorkspaceView.as_view(), name="workspace"),
    path("workspace/imports/<uuid:job_id>", ImportJobView.as_view(), name="import-job"),
    path("auth/token", views.TokenView.as_view(), name="auth-token"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves its start-up script as a file: no inline script, CSP allows it.
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api:schema"), name="docs"),
]
