from django.urls import path

from profiles import views

urlpatterns = [
    path("", views.home, name="home"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("profiles/", views.profile_list, name="profile-list"),
    # "_new" cannot be a profile key (keys start with a letter or digit), so no profile hides it.
    path("profiles/_new/", views.profile_create, name="profile-create"),
    path("profiles/<slug:key>/", views.profile_editor, name="profile-editor"),
    path("profiles/<slug:key>/preview/", views.profile_preview, name="profile-preview"),
    path("profiles/<slug:key>/duplicate/", views.profile_duplicate, name="profile-duplicate"),
    path("profiles/<slug:key>/delete/", views.profile_delete, name="profile-delete"),
    path("layers/", views.layer_list, name="layer-list"),
    path("layers/<slug:key>/", views.layer_edit, name="layer-edit"),
    path("layers/<slug:key>/items/", views.item_list, name="item-list"),
    path("layers/<slug:key>/items/<int:item_id>/", views.item_edit, name="item-edit"),
    path("workspace/download/", views.workspace_download, name="workspace-download"),
    path("workspace/upload/", views.workspace_upload, name="workspace-upload"),
    path(
        "workspace/imports/<uuid:job_id>/",
        views.workspace_import_job,
        name="workspace-import-job",
    ),
]
