"""Change requests: a proposed change of one profile, its impact, reviews, and its application.

A request carries ``changes`` — the draft of a direct write: ``name``, ``description``,
``budget`` and ``rules`` (layer key -> partial rule whose fields replace the saved ones,
``null`` for a field removes it, ``null`` for a layer restores the default rule). It is
validated like a direct write and, before anyone reviews it, resolved against every saved
scenario of the profile (``profiles.safechange.impact``). Applying it writes one version through the
ordinary write path, authored by the requester and naming the approvers, and only when the
profile is still at the version the request was written against.
"""

import copy
import re

from django.db import transaction
from django.utils import timezone

from profiles.authoring.profiles import profile_write_document
from profiles.models import (
    ActivityOrigin,
    ChangeRequest,
    ChangeRequestApproval,
    Profile,
    ProfileVersion,
)
from profiles.notifications.email import change_request_applied_email
from profiles.notifications.webhooks import change_request_event, webhook_event_emit
from profiles.safechange.change_sets import (
    change_set_rebase,
    change_set_revise,
    change_set_write,
    change_sets_approvals_required,
)
from profiles.safechange.errors import (
    ApprovalsMissing,
    ChangeRequestChanged,
    ChangesInvalid,
    NotAllowed,
    NotOpen,
    RevisionRequired,
    SelfApproval,
    StaleChangeRequest,
)
from profiles.safechange.impact import profile_impact
from profiles.safechange.selectors import (
    approvals_counted,
    change_request_environments,
    change_request_etag,
    change_request_get,
    environment_approvals_get,
)
from profiles.safechange.titles import change_request_text_checked, default_title
from profiles.safechange.verdicts import check_no_changes_requested
from profiles.versioning.environments import SafeChangeError
from profiles.versioning.versions import (
    RULE_DOCUMENT_FIELDS,
    VersionConflict,
    WriteOrigin,
    document_changes,
    latest_versions_get,
    profile_documents_get,
)
from profiles.workspace import cache
from profiles.workspace.concurrency import check_if_match, profile_etag
from profiles.workspace.validation import (
    rules_merged,
    unknown_layer_issues,
    validate_profile,
)
from resolver import ValidationIssue, WorkspaceError

CHANGE_FIELDS = ("name", "description", "budget", "rules")


# --- the changes -------------------------------------------------------------------------


def changes_applied(document: dict, changes: dict) -> dict:
    """Return the profile document with the changes made (the document is not modified)."""
    result = copy.deepcopy(document)
    for name in ("name", "description"):
        if name in changes:
            if changes[name] in (None, ""):
                result.pop(name, None)
            else:
                result[name] = changes[name]
    if changes.get("budget") is not None:
        result["budget"] = changes["budget"]
    if changes.get("rules"):
        rules = rules_merged(result.get("rules"), changes["rules"])
        if rules:
            result["rules"] = rules
        else:
            result.pop("rules", None)
    return result


def changes_to_reach(current: dict, target: dict, *, fields=CHANGE_FIELDS) -> dict:
    """Return the smallest changes that turn ``current`` into ``target`` (for ``fields``)."""
    changes: dict = {}
    for name in ("name", "description", "budget"):
        if name in fields and current.get(name) != target.get(name):
            changes[name] = target.get(name)
    if "rules" in fields:
        old_rules = current.get("rules") or {}
        new_rules = target.get("rules") or {}
        rules: dict = {}
        for layer_key in old_rules:
            if layer_key not in new_rules:
                rules[layer_key] = None
        for layer_key, rule in new_rules.items():
            saved = old_rules.get(layer_key)
            if saved is None:
                rules[layer_key] = dict(rule)
            elif saved != rule:
                rules[layer_key] = {
                    name: rule.get(name)
                    for name in RULE_DOCUMENT_FIELDS
                    if saved.get(name) != rule.get(name)
                }
        if rules:
            changes["rules"] = rules
    return changes


def _shape_issues(changes, *, empty_allowed: bool = False) -> list[ValidationIssue]:
    """Return what the engine cannot be asked about: the shape of the changes object."""
    if not isinstance(changes, dict):
        return [ValidationIssue("changes", "must be an object")]
    issues = [
        ValidationIssue(f"changes.{name}", "unknown field (use name, description, budget, rules)")
        for name in changes
        if name not in CHANGE_FIELDS
    ]
    for name in ("name", "description"):
        value = changes.get(name)
        if value is not None and not isinstance(value, str):
            issues.append(ValidationIssue(f"changes.{name}", "must be a string"))
    rules = changes.get("rules")
    if rules is not None and not isinstance(rules, dict):
        issues.append(ValidationIssue("changes.rules", "must be an object keyed by layer"))
    elif isinstance(rules, dict):
        for layer_key, partial in rules.items():
            if partial is not None and not isinstance(partial, dict):
                issues.append(ValidationIssue(f"changes.rules.{layer_key}", "must be an object"))
    if not issues and not changes and not empty_allowed:
        issues.append(ValidationIssue("changes", "must change at least one field"))
    return issues


_PROFILE_PATH = re.compile(r"^profiles\[\d+\]\.?")


def _proposal_issues(document: dict, snapshot) -> list[ValidationIssue]:
    """Validate a proposed profile entry as a direct write validates it (the engine's one-entry
    validator with the stored layer and consumer keys); paths come back under ``changes``."""
    workspace = snapshot.document
    issues = validate_profile(
        document,
        layer_keys=[layer["key"] for layer in workspace.get("layers") or []],
        consumer_keys=[consumer["key"] for consumer in workspace.get("consumers") or []],
    )
    return [
        ValidationIssue(f"changes.{issue.path}" if issue.path else "changes", issue.message)
        for issue in issues
    ]


def _draft_issues(error: WorkspaceError) -> list[ValidationIssue]:
    return [
        ValidationIssue("changes." + _PROFILE_PATH.sub("", issue.path), issue.message)
        for issue in (error.issues or [ValidationIssue(error.path, error.message)])
    ]


def _validated(
    *, key: str, base_document: dict, changes, snapshot, empty_allowed: bool = False
) -> dict:
    """Return the proposed document; raise ChangesInvalid naming each field."""
    # The shape of the changes first; then the proposed entry as the engine validates it
    # (lengths, text rule, storage limits included).
    issues = _shape_issues(changes, empty_allowed=empty_allowed)
    if issues:
        raise ChangesInvalid(issues)
    # Rules of thousands of layers that do not exist: refused before anything is merged.
    issues = unknown_layer_issues(changes.get("rules"), snapshot.compiled.layer_keys)
    if issues:
        raise ChangesInvalid([ValidationIssue(f"changes.{i.path}", i.message) for i in issues])
    proposed = changes_applied(base_document, changes)
    issues = _proposal_issues(proposed, snapshot)
    if issues:
        raise ChangesInvalid(issues)
    return proposed


def _impact(*, key: str, changes: dict, exists: bool, snapshot, offset: int = 0) -> list[dict]:
    if not exists:
        return []  # a profile created on apply has no saved scenarios yet
    try:
        return profile_impact(
            profile_key=key,
            rules=changes.get("rules"),
            budget=changes.get("budget"),
            compiled=snapshot.compiled,
            offset=offset,
        )
    except WorkspaceError as exc:
        raise ChangesInvalid(_draft_issues(exc)) from exc


def draft_impact(*, profile_key: str, changes, offset: int = 0) -> list[dict]:
    """Return the impact of a draft on the profile's saved scenarios, writing nothing.

    ``changes`` has the shape of a change request's; the scenarios are resolved from the
    ``offset``-th on, as many as one impact resolves. Raises ChangesInvalid and
    ``Profile.DoesNotExist``.
    """
    snapshot = cache.workspace_get()
    document = profile_documents_get([profile_key]).get(profile_key)
    if document is None:
        raise Profile.DoesNotExist(profile_key)
    _validated(
        key=profile_key,
        base_document=document,
        changes=changes,
        snapshot=snapshot,
        empty_allowed=True,
    )
    return _impact(key=profile_key, changes=changes, exists=True, snapshot=snapshot, offset=offset)


def change_request_proposed(change_request: ChangeRequest) -> tuple[dict | None, dict]:
    """Return (the document it was written against, the document it proposes)."""
    if change_request.creates is not None:
        base = None
        start = dict(change_request.creates)
    else:
        version = ProfileVersion.objects.filter(
            profile_key=change_request.profile_key, number=change_request.base_version
        ).first()
        base = version.document if version is not None else None
        start = base or {}
    return base, changes_applied(start, change_request.changes)


def change_request_diff(change_request: ChangeRequest) -> list[dict]:
    """Return the changes as SPEC §2 paths with before/after values (``versions`` diff)."""
    base, proposed = change_request_proposed(change_request)
    return document_changes(base, proposed)


# --- writing -----------------------------------------------------------------------------


def change_request_create(
    *,
    profile_key: str,
    title,
    changes,
    user,
    description="",
    creates: dict | None = None,
    promoted_from: str | None = None,
    if_match: str | None = None,
) -> ChangeRequest:
    """Open a change request of an existing profile (or, with ``creates``, of a new one).

    Validates the changes as a direct write is validated (ChangesInvalid, with paths such as
    ``changes.rules.kb.mode``) and computes their impact on every saved scenario. Raises
    ``Profile.DoesNotExist`` for an unknown profile, and ``PreconditionFailed`` when
    ``if_match`` (the profile's ETag the changes were written against, e.g. the editor page's)
    is no longer the profile's: changes computed against an older version would revert
    whatever was saved since.
    """
    untitled = title is None or (isinstance(title, str) and not title.strip())
    title, description = change_request_text_checked("untitled" if untitled else title, description)
    snapshot = cache.workspace_get()
    if creates is None:
        base_document = profile_documents_get([profile_key]).get(profile_key)
        if base_document is None:
            raise Profile.DoesNotExist(profile_key)
        if if_match is not None:
            profile = Profile.objects.select_related("consumer").get(key=profile_key)
            check_if_match(if_match, profile_etag(profile))
        environment = base_document.get("environment")
    else:
        base_document = dict(creates)
        environment = creates.get("environment")
    proposed = _validated(
        key=profile_key, base_document=base_document, changes=changes, snapshot=snapshot
    )
    if untitled:  # what it changes ("Change support-answer: budget, rules.kb.maxItems")
        paths = [change["path"] for change in document_changes(base_document, proposed)]
        title = default_title(profile_key=profile_key, paths=paths)
    impact = _impact(key=profile_key, changes=changes, exists=creates is None, snapshot=snapshot)
    latest = latest_versions_get([profile_key]).get(profile_key)
    change_request = ChangeRequest.objects.create(
        profile_key=profile_key,
        environment=environment,
        title=title,
        description=description,
        author=user,
        base_version=None if latest is None else latest.number,
        changes=changes,
        creates=creates,
        promoted_from=promoted_from,
        impact=impact,
    )
    webhook_event_emit("change_request.opened", change_request_event(change_request))
    return change_request


def _open_for_update(pk: int) -> ChangeRequest:
    change_request = change_request_get(pk=pk, lock=True)
    if change_request.status != ChangeRequest.Status.OPEN:
        raise NotOpen(change_request)
    return change_request


def _current_base(change_request: ChangeRequest) -> tuple[dict | None, int | None]:
    """Return the profile's stored document and latest version number."""
    key = change_request.profile_key
    latest = latest_versions_get([key]).get(key)
    return profile_documents_get([key]).get(key), (None if latest is None else latest.number)


def _check_revision(change_request: ChangeRequest, if_match: str | None) -> None:
    if if_match is not None and not _names_revision(if_match, change_request):
        raise ChangeRequestChanged(change_request)


def _names_revision(if_match: str, change_request: ChangeRequest) -> bool:
    current = change_request_etag(change_request)
    candidates = [part.strip().removeprefix("W/") for part in if_match.split(",")]
    return current in candidates or current.strip('"') in candidates


def change_request_update(*, pk: int, user, if_match: str | None = None, **fields):
    """Edit an open request (its author only): ``title``, ``description``, ``changes``.

    Any effective edit withdraws the approvals given so far and makes a new revision; new
    changes are validated and their impact recomputed. With ``if_match`` (the request's
    ETag), a request edited since answers ``ChangeRequestChanged``.
    """
    with transaction.atomic():
        change_request = _open_for_update(pk)
        if change_request.author_id != getattr(user, "pk", None):
            raise NotAllowed("only the author can edit a change request")
        if if_match is not None and if_match.strip() != "*":
            _check_revision(change_request, if_match)
        title, description = change_request_text_checked(
            fields.get("title", change_request.title),
            fields.get("description", change_request.description),
        )
        edited = title != change_request.title or description != change_request.description
        if change_request.is_change_set:
            if "changes" in fields:
                change_set_revise(change_request, fields["changes"])
                edited = True
        elif "changes" in fields and fields["changes"] != change_request.changes:
            changes = fields["changes"]
            snapshot = cache.workspace_get()
            base, _ = change_request_proposed(change_request)
            start = base if change_request.creates is None else dict(change_request.creates)
            _validated(
                key=change_request.profile_key,
                base_document=start or {},
                changes=changes,
                snapshot=snapshot,
            )
            change_request.impact = _impact(
                key=change_request.profile_key,
                changes=changes,
                exists=change_request.creates is None,
                snapshot=snapshot,
            )
            change_request.changes = changes
            edited = True
        if edited:
            change_request.title = title
            change_request.description = description
            change_request.revision += 1
            change_request.save()
            # Reviewers approved what they saw; an edited request needs their review again.
            change_request.approvals.all().delete()
    return change_request


def change_request_approve(*, pk: int, user, if_match: str | None) -> ChangeRequest:
    """Approve the revision of an open request that the reviewer read (``if_match``: its
    ETag). Its author cannot (SelfApproval); approving twice is one approval.

    Raises RevisionRequired without ``if_match`` and ChangeRequestChanged when the request
    was edited or rebased since that revision: nobody approves content they did not see.
    """
    with transaction.atomic():
        change_request = _open_for_update(pk)
        if change_request.author_id == user.pk:
            raise SelfApproval()
        if if_match is None or if_match.strip() in ("", "*"):
            raise RevisionRequired(change_request)
        _check_revision(change_request, if_match)
        ChangeRequestApproval.objects.update_or_create(
            change_request=change_request,
            user=user,
            defaults={"revision": change_request.revision},
        )
        webhook_event_emit(
            "change_request.approved",
            change_request_event(change_request, approvedBy=user.get_username()),
        )
    return change_request


def _resolve(pk: int, user, status: str, *, author_only: bool) -> ChangeRequest:
    with transaction.atomic():
        change_request = _open_for_update(pk)
        is_author = change_request.author_id == user.pk
        if author_only and not is_author and not user.is_superuser:
            raise NotAllowed("only the author can close a change request (reviewers reject)")
        change_request.status = status
        change_request.resolved_by = user
        change_request.resolved_at = timezone.now()
        change_request.save()
    return change_request


def change_request_reject(*, pk: int, user) -> ChangeRequest:
    """Reject an open request (a reviewer's decision)."""
    return _resolve(pk, user, ChangeRequest.Status.REJECTED, author_only=False)


def change_request_close(*, pk: int, user) -> ChangeRequest:
    """Withdraw an open request (its author, or a superuser)."""
    return _resolve(pk, user, ChangeRequest.Status.CLOSED, author_only=True)


def change_request_rebase(*, pk: int, user) -> ChangeRequest:
    """Move an open request onto the profile's current version and recompute its impact.

    What gets applied changes with the base, so the approvals are withdrawn.
    """
    with transaction.atomic():
        change_request = _open_for_update(pk)
        if change_request.is_change_set:
            if change_set_rebase(change_request):
                change_request.approvals.all().delete()
                change_request.revision += 1
            change_request.save()
            return change_request
        document, current = _current_base(change_request)
        if change_request.creates is not None:
            if document is not None:
                raise SafeChangeError(
                    f'profile "{change_request.profile_key}" exists now: open a change '
                    "request of it instead",
                    path="profile",
                )
            start = dict(change_request.creates)
        elif document is None:
            raise SafeChangeError(
                f'profile "{change_request.profile_key}" no longer exists', path="profile"
            )
        else:
            start = document
        snapshot = cache.workspace_get()
        _validated(
            key=change_request.profile_key,
            base_document=start,
            changes=change_request.changes,
            snapshot=snapshot,
        )
        change_request.impact = _impact(
            key=change_request.profile_key,
            changes=change_request.changes,
            exists=change_request.creates is None,
            snapshot=snapshot,
        )
        if change_request.base_version != current:
            change_request.approvals.all().delete()
            change_request.revision += 1
        change_request.base_version = current
        change_request.environment = change_request_environments([change_request])[
            change_request.pk
        ]
        change_request.save()
    return change_request


def change_request_apply(*, pk: int, user) -> ProfileVersion | None:
    """Apply an approved request: one new version, authored by the requester, naming the
    approvers. Return that version.

    Raises NotOpen, ApprovalsMissing (fewer approvals than the environment its profile is in
    now asks for, counting only approvals of the current revision by users who may still
    review), StaleChangeRequest (the profile moved past ``baseVersion``; nothing is written),
    ChangesRequested (a reviewer asked for changes on the current revision, see
    ``profiles.safechange.verdicts``) and the write path's own errors (e.g. EntryInvalid when
    a layer it names was deleted since). Two applications racing on the same base: the
    writers' lock orders them and the second finds the profile moved.
    """
    with transaction.atomic():
        change_request = _open_for_update(pk)
        check_no_changes_requested(change_request)
        # Approvals and the environment are read as they are now, under the request's lock:
        # a profile moved into a stricter environment, a reviewer deactivated or removed
        # from the editors since they approved, count as they stand at this moment.
        given = list(change_request.approvals.select_related("user").order_by("created_at"))
        counted = approvals_counted((change_request, approval) for approval in given)
        approvals = [approval for approval in given if approval.pk in counted]
        environment = change_request_environments([change_request])[change_request.pk]
        required = environment_approvals_get({environment})[environment]
        if change_request.is_change_set:
            required = change_sets_approvals_required([change_request])[change_request.pk]
        if len(approvals) < required:
            ignored = len(given) - len(approvals)
            raise ApprovalsMissing(
                f"change request #{change_request.pk} has {len(approvals)} of the {required} "
                f"approvals {_environment_words(environment, change_request)} requires"
                + (
                    f" ({ignored} given by users who may no longer review, or of an earlier "
                    "revision, do not count)"
                    if ignored
                    else ""
                ),
                approvals=len(approvals),
                approvalsRequired=required,
            )
        change_request.environment = environment
        if change_request.is_change_set:
            # Every entity as it was written against, every entry through its service.
            change_set_write(
                change_request,
                user=user,
                approvers=tuple(approval.user.get_username() for approval in approvals),
            )
            change_request.status = ChangeRequest.Status.APPLIED
            change_request.resolved_by = user
            change_request.resolved_at = timezone.now()
            change_request.save()
            webhook_event_emit("change_request.applied", change_request_event(change_request))
            return None
        key = change_request.profile_key
        base, proposed = change_request_proposed(change_request)
        if change_request.creates is None and base is None:
            raise StaleChangeRequest(change_request, None)

        def still_at_base():
            # Runs under the writers' lock: nothing else writes until this transaction ends.
            latest = latest_versions_get([key]).get(key)
            current = None if latest is None else latest.number
            exists = Profile.objects.filter(key=key).exists()
            if current != change_request.base_version or exists != (change_request.creates is None):
                raise StaleChangeRequest(change_request, current)

        try:
            profile_write_document(
                key=key,
                document=proposed,
                user=user,
                check=still_at_base,
                origin=WriteOrigin(
                    source=ProfileVersion.Source.CHANGE_REQUEST,
                    message=change_request.title,
                    author=change_request.author,
                    change_request=change_request,
                    approvers=tuple(approval.user.get_username() for approval in approvals),
                    expected_versions={key: change_request.base_version},
                    door=ActivityOrigin.CHANGE_REQUEST,
                ),
            )
        except VersionConflict as exc:
            raise StaleChangeRequest(change_request, exc.actual) from exc
        latest = latest_versions_get([key]).get(key)
        change_request.status = ChangeRequest.Status.APPLIED
        change_request.resolved_by = user
        change_request.resolved_at = timezone.now()
        change_request.applied_version = None if latest is None else latest.number
        change_request.save()
        webhook_event_emit("change_request.applied", change_request_event(change_request))
        change_request_applied_email(change_request, actor=user)
    return latest


def _environment_words(environment: str | None, change_request=None) -> str:
    if change_request is not None and change_request.is_change_set:
        return "the environments of the profiles it affects"
    return f'environment "{environment}"' if environment else "a profile without environment"
