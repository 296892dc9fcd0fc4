"""Routes of ``/api/v1/``: the entry viewsets on a router (collections end with a slash,
objects do not, see ``profiles.api.routers``), and the resolution and workspace views."""

from django.urls import path
from drf_spectacular.views import SpectacularAPIView

from profiles.api import (
    activity,
    authoring,
    import_export,
    keys,
    material,
    notifications,
    resolution,
    reviews,
    safechange,
    snapshot,
    versioning,
)
from profiles.api.routers import ApiRouter
from profiles.api.schema import ApiDocsView

app_name = "api"

router = ApiRouter()
router.register("consumers", material.ConsumerViewSet, basename="consumer")
router.register("layers", material.LayerViewSet, basename="layer")
router.register(r"layers/(?P<key>[^/]+)/items", material.ItemViewSet, basename="item")
router.register("profiles", authoring.ProfileViewSet, basename="profile")
router.register(r"profiles/(?P<key>[^/]+)/rules", authoring.RuleViewSet, basename="rule")
router.register("scenarios", authoring.ScenarioViewSet, basename="scenario")
# Versioning (profiles.api.versioning): versions, environments; safe change: change requests.
router.register(
    r"profiles/(?P<key>[^/]+)/versions",
    versioning.ProfileVersionViewSet,
    basename="profile-version",
)
router.register("environments", versioning.EnvironmentViewSet, basename="environment")
router.register("change-requests", safechange.ChangeRequestViewSet, basename="change-request")
router.register("keys", keys.ApiKeyViewSet, basename="key")  # scoped API keys
router.register("webhooks", notifications.WebhookViewSet, basename="webhook")  # staff only

urlpatterns = [
    path("resolve", resolution.ResolveView.as_view(), name="resolve"),
    path("expand", resolution.ExpandView.as_view(), name="expand"),
    path("snapshot", snapshot.SnapshotView.as_view(), name="snapshot"),  # local evaluation
    path("profiles/<str:key>/preview", resolution.PreviewView.as_view(), name="profile-preview"),
    *versioning.urlpatterns,  # diff
    *safechange.urlpatterns,  # impact, promote
    *reviews.urlpatterns,  # a change request's comments, request-changes
    # A layer's bulk ingest: not under items/, where "bulk" may be an item's path.
    path("layers/<str:key>/bulk", material.ItemBulkView.as_view(), name="item-bulk"),
    path(
        "layers/<str:key>/bulk/<uuid:job_id>",
        material.ItemBulkJobView.as_view(),
        name="item-bulk-job",
    ),
    *router.urls,
    path("workspace", import_export.WorkspaceView.as_view(), name="workspace"),
    path(
        "workspace/imports/<uuid:job_id>", import_export.ImportJobView.as_view(), name="import-job"
    ),
    path("activity", activity.ActivityView.as_view(), name="activity"),  # the activity log
    path("auth/token", keys.TokenView.as_view(), name="auth-token"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves its start-up script as a file: no inline script, CSP allows it.
    path("docs/", ApiDocsView.as_view(url_name="api:schema"), name="docs"),
]
