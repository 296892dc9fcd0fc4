from django.urls import path

from profiles.studio.views import (
    activity,
    authoring,
    bulk_ingest,
    compare,
    editor,
    editor_save,
    import_export,
    keys,
    material,
    notifications,
    pages,
    playground,
    reviews,
    safechange,
    sweep,
    team,
    versioning,
)

urlpatterns = [
    path("", pages.home, name="home"),
    path("favicon.ico", pages.favicon, name="favicon"),
    path("help/reasons/", pages.help_reasons, name="help-reasons"),
    # Profiles. "_new" cannot be a profile key (keys start with a letter or digit).
    path("profiles/", authoring.profile_list, name="profile-list"),
    path("profiles/_new/", authoring.profile_create, name="profile-create"),
    path("profiles/_compare/", compare.profile_compare, name="profile-compare"),
    path("profiles/_playground/", playground.profile_playground, name="profile-playground"),
    path("profiles/<slug:key>/details/", authoring.profile_edit, name="profile-edit"),
    path("profiles/<slug:key>/duplicate/", authoring.profile_duplicate, name="profile-duplicate"),
    path("profiles/<slug:key>/delete/", authoring.profile_delete, name="profile-delete"),
    # The editor and its actions.
    path("profiles/<slug:key>/", editor.profile_editor, name="profile-editor"),
    *editor_save.urlpatterns,  # save, discard, save impact, propose
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
        "profiles/<slug:key>/preview/sweep/",
        sweep.profile_preview_sweep,
        name="profile-preview-sweep",
    ),
    path(
        "profiles/<slug:key>/preview/handoff/",
        editor.profile_preview_handoff,
        name="profile-preview-handoff",
    ),
    # Consumers. "_new" cannot be a key.
    path("consumers/", material.consumer_list, name="consumer-list"),
    path("consumers/_new/", material.consumer_create, name="consumer-create"),
    path("consumers/<slug:key>/", material.consumer_edit, name="consumer-edit"),
    path("consumers/<slug:key>/delete/", material.consumer_delete, name="consumer-delete"),
    # Layers and items.
    path("layers/", material.layer_list, name="layer-list"),
    path("layers/_new/", material.layer_create, name="layer-create"),
    path("layers/<slug:key>/", material.layer_edit, name="layer-edit"),
    path("layers/<slug:key>/delete/", material.layer_delete, name="layer-delete"),
    path("layers/<slug:key>/items/", material.item_list, name="item-list"),
    path("layers/<slug:key>/items/_new/", material.item_create, name="item-create"),
    # A layer's bulk ingest (profiles.studio.views.bulk_ingest): items are named by their id
    # here, so "bulk" is no item's URL (the API puts its bulk door beside items/ instead).
    path("layers/<slug:key>/items/bulk/", bulk_ingest.item_bulk, name="item-bulk"),
    path(
        "layers/<slug:key>/items/bulk/<uuid:job_id>/",
        bulk_ingest.item_bulk_job,
        name="item-bulk-job",
    ),
    path("layers/<slug:key>/items/<int:item_id>/", material.item_edit, name="item-edit"),
    path(
        "layers/<slug:key>/items/<int:item_id>/delete/",
        material.item_delete,
        name="item-delete",
    ),
    # The signed-in user's API token and scoped keys.
    path("tokens/", keys.token_list, name="token-list"),
    path("tokens/create/", keys.token_create, name="token-create"),
    path("tokens/revoke/", keys.token_revoke, name="token-revoke"),
    path("tokens/keys/create/", keys.key_create, name="key-create"),
    path("tokens/keys/<int:key_id>/revoke/", keys.key_revoke, name="key-revoke"),
    # The workspace file.
    path("workspace/download/", import_export.workspace_download, name="workspace-download"),
    path("workspace/upload/", import_export.workspace_upload, name="workspace-upload"),
    path(
        "workspace/imports/<uuid:job_id>/",
        import_export.workspace_import_job,
        name="workspace-import-job",
    ),
    # The activity log (profiles.studio.views.activity).
    path("activity/", activity.activity_log, name="activity"),
    # Versioning: history, restore, environments (profiles.studio.views.versioning).
    *versioning.urlpatterns,
    # Safe change: change requests, promotion (profiles.studio.views.safechange).
    *safechange.urlpatterns,
    # Outgoing webhooks, for staff (profiles.studio.views.notifications).
    *notifications.urlpatterns,
    # The team, for staff, and the page an invitation opens (profiles.studio.views.team).
    *team.urlpatterns,
    # Reviews: confirming a proposal, the thread, verdicts, reviewers, scheduled apply.
    *reviews.urlpatterns,
]
