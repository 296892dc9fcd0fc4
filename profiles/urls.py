from django.urls import path

from profiles.views import editor, material, pages, profiles, workspace

urlpatterns = [
    path("", pages.home, name="home"),
    path("favicon.ico", pages.favicon, name="favicon"),
    # Profiles. "_new" cannot be a profile key (keys start with a letter or digit).
    path("profiles/", profiles.profile_list, name="profile-list"),
    path("profiles/_new/", profiles.profile_create, name="profile-create"),
    path("profiles/<slug:key>/duplicate/", profiles.profile_duplicate, name="profile-duplicate"),
    path("profiles/<slug:key>/delete/", profiles.profile_delete, name="profile-delete"),
    # The editor and its actions.
    path("profiles/<slug:key>/", editor.profile_editor, name="profile-editor"),
    path("profiles/<slug:key>/save/", editor.profile_save, name="profile-save"),
    path("profiles/<slug:key>/discard/", editor.profile_discard, name="profile-discard"),
    path(
        "profiles/<slug:key>/scenario/load/",
        editor.profile_scenario_load,
        name="profile-scenario-load",
    ),
    path(
        "profiles/<slug:key>/scenario/save/",
        editor.profile_scenario_save,
        name="profile-scenario-save",
    ),
    path("profiles/<slug:key>/preview/", editor.profile_preview, name="profile-preview"),
    path(
        "profiles/<slug:key>/preview/rows/",
        editor.profile_preview_rows,
        name="profile-preview-rows",
    ),
    path(
        "profiles/<slug:key>/preview/cut/", editor.profile_preview_cut, name="profile-preview-cut"
    ),
    path(
        "profiles/<slug:key>/preview/handoff/",
        editor.profile_preview_handoff,
        name="profile-preview-handoff",
    ),
    # Layers and items.
    path("layers/", material.layer_list, name="layer-list"),
    path("layers/<slug:key>/", material.layer_edit, name="layer-edit"),
    path("layers/<slug:key>/items/", material.item_list, name="item-list"),
    path("layers/<slug:key>/items/<int:item_id>/", material.item_edit, name="item-edit"),
    # The workspace file.
    path("workspace/download/", workspace.workspace_download, name="workspace-download"),
    path("workspace/upload/", workspace.workspace_upload, name="workspace-upload"),
    path(
        "workspace/imports/<uuid:job_id>/",
        workspace.workspace_import_job,
        name="workspace-import-job",
    ),
]
