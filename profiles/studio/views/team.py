"""The Team page, for staff: the members with their role and last sign-in, a role changed
from its row, deactivation and reactivation after a confirmation, invitations sent, listed
and revoked; and the page an invitation's link opens (signed out), where the invitee chooses
a username and a password.

The rules are ``profiles.team``'s: ``members`` refuses a change of one's own role and the
last staff member's demotion or deactivation; ``invitations`` checks addresses, usernames
and passwords. Every change is in the activity log (kinds ``member`` and ``invitation``).
"""

from django import forms
from django.contrib import messages
from django.contrib.auth import login
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_http_methods, require_POST

from profiles.models import INVITATION_EMAIL_MAX_LENGTH
from profiles.studio.lookups import or_404
from profiles.studio.throttling import throttled
from profiles.team import invitations, selectors
from profiles.team.members import (
    MEMBER_ROLES,
    MemberChangeError,
    member_active_set,
    member_role_set,
)
from profiles.workspace.origin import STUDIO
from profiles.workspace.permissions import ADMINISTER, capability_required

MEMBERS_PER_PAGE = 50
ROLE_CHOICES = [(str(role), str(role)) for role in MEMBER_ROLES]
ROLE_HELP = {
    "reader": "resolves and reads the configuration",
    "editor": "also writes rules and material, imports and exports",
    "staff": "also administers: the team, webhooks, protected environments",
}
# Django's session backend signs the new member in (the first backend is the login rate's).
SIGN_IN_BACKEND = "django.contrib.auth.backends.ModelBackend"


class TeamForm(forms.Form):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("label_suffix", "")  # labels read "Email", not "Email:"
        super().__init__(*args, **kwargs)


class InviteForm(TeamForm):
    email = forms.CharField(
        label="Email",
        max_length=INVITATION_EMAIL_MAX_LENGTH,
        widget=forms.EmailInput(attrs={"autocomplete": "off"}),
        help_text="The invitation link is sent there; it works once.",
    )
    role = forms.ChoiceField(
        label="Role",
        choices=[(value, f"{value}: {ROLE_HELP[value]}") for value, _ in ROLE_CHOICES],
        initial="reader",
    )


class JoinForm(TeamForm):
    username = forms.CharField(
        label="Username",
        max_length=invitations.USERNAME_MAX_LENGTH,
        widget=forms.TextInput(attrs={"autocomplete": "username"}),
        help_text="What you sign in with: letters, digits and @ . + - _ only.",
    )
    password = forms.CharField(
        label="Password",
        strip=False,
        max_length=invitations.PASSWORD_MAX_LENGTH,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text="At least 8 characters, not only digits, not a common password.",
    )
    password_again = forms.CharField(
        label="Password again",
        strip=False,
        max_length=invitations.PASSWORD_MAX_LENGTH,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )

    def clean(self):
        data = super().clean()
        if data.get("password") and data.get("password_again") not in (None, data["password"]):
            self.add_error("password_again", "The two passwords differ.")
        return data


def _service_errors(form: forms.Form, exc: invitations.InvitationInvalid) -> None:
    for field, errors in exc.errors.items():
        for error in errors:
            form.add_error(field if field in form.fields else None, error)


def _team_page(request, *, form=None, status=200):
    members = Paginator(selectors.member_list(), MEMBERS_PER_PAGE)
    page = members.get_page(request.GET.get("page"))
    rows = [
        {"member": member, "role": str(selectors.member_role_stored(member))}
        for member in page.object_list
    ]
    context = {
        "rows": rows,
        "page": page,
        "roles": ROLE_CHOICES,
        "invitations": list(selectors.invitation_list_open()),
        "form": form or InviteForm(),
    }
    return render(request, "profiles/team.html", context, status=status)


@capability_required(ADMINISTER)
@require_http_methods(["GET"])
def team_page(request):
    """List the members and the open invitations, with the invitation form."""
    return _team_page(request)


@capability_required(ADMINISTER)
@require_POST
@throttled("invite")
def team_invite(request):
    """Send an invitation (or renew an open one of the same address)."""
    form = InviteForm(request.POST)
    if not form.is_valid():
        return _team_page(request, form=form, status=400)
    try:
        sent = invitations.invitation_create(
            email=form.cleaned_data["email"],
            role=form.cleaned_data["role"],
            actor=request.user,
            origin=STUDIO,
        )
    except invitations.InvitationInvalid as exc:
        _service_errors(form, exc)
        return _team_page(request, form=form, status=400)
    invitation = sent.invitation
    what = "renewed: the earlier link no longer works" if sent.renewed else "sent"
    messages.success(
        request,
        f"Invitation of {invitation.email} as {invitation.role} {what}. It expires "
        f"{invitation.expires_at:%Y-%m-%d %H:%M} UTC.",
    )
    return redirect("team")


@capability_required(ADMINISTER)
@require_POST
def team_invitation_revoke(request, invitation_id: int):
    """Stop an invitation's link."""
    invitation = or_404("no such invitation", selectors.invitation_get, invitation_id=invitation_id)
    if invitations.invitation_revoke(invitation=invitation, actor=request.user, origin=STUDIO):
        messages.success(request, f"Invitation of {invitation.email} revoked.")
    else:
        messages.error(
            request, f"The invitation of {invitation.email} was already accepted or revoked."
        )
    return redirect("team")


def _member(member_id: int):
    return or_404("no such member", selectors.member_get, member_id=member_id)


def _back(request):
    page = request.POST.get("page", "")
    url = reverse("team")
    return redirect(f"{url}?page={page}" if page.isdigit() else url)


@capability_required(ADMINISTER)
@require_POST
def team_member_role(request, member_id: int):
    """Give a member another role."""
    member = _member(member_id)
    role = request.POST.get("role", "")
    name = member.get_username()
    if role not in dict(ROLE_CHOICES):
        messages.error(request, f"Choose reader, editor or staff for {name}.")
        return _back(request)
    try:
        changed = member_role_set(member, role, actor=request.user, origin=STUDIO)
    except MemberChangeError as exc:
        messages.error(request, str(exc))
        return _back(request)
    if changed:
        messages.success(request, f"{name} is now {role}.")
    else:
        messages.info(request, f"{name} already is {role}: nothing changed.")
    return _back(request)


@capability_required(ADMINISTER)
@require_http_methods(["GET", "POST"])
def team_member_active(request, member_id: int):
    """Ask first (GET), then deactivate or reactivate the member (POST)."""
    member = _member(member_id)
    name = member.get_username()
    activate = not member.is_active
    if request.method == "POST":
        try:
            member_active_set(member, activate, actor=request.user, origin=STUDIO)
        except MemberChangeError as exc:
            messages.error(request, str(exc))
            return redirect("team")
        messages.success(request, f"{name} {'is active again' if activate else 'is deactivated'}.")
        return redirect("team")
    context = {
        "member": member,
        "activate": activate,
        "role": str(selectors.member_role_stored(member)),
    }
    return render(request, "profiles/team_member_active.html", context)


def _join_refused(request, exc: invitations.InvitationRefused):
    status = 404 if exc.reason == "invalid" else 410
    context = {"refusal": str(exc), "reason": exc.reason}
    response = render(request, "profiles/team_join.html", context, status=status)
    add_never_cache_headers(response)
    return response


@require_http_methods(["GET", "POST"])
def team_join(request, token: str):
    """The invitation's page: the invitee chooses a username and a password and is signed
    in; a link that does not work says why. Signed in, one is asked to sign out first."""
    try:
        invitation = invitations.invitation_open(token)
    except invitations.InvitationRefused as exc:
        return _join_refused(request, exc)
    form = JoinForm(request.POST or None)
    status = 200
    if request.method == "POST" and request.user.is_authenticated:
        status = 403  # signed in as someone else: sign out first (the page says so)
    elif request.method == "POST":
        if form.is_valid():
            try:
                user = invitations.invitation_accept(
                    token=token,
                    username=form.cleaned_data["username"],
                    password=form.cleaned_data["password"],
                    origin=STUDIO,
                )
            except invitations.InvitationRefused as exc:
                return _join_refused(request, exc)
            except invitations.InvitationInvalid as exc:
                _service_errors(form, exc)
            else:
                login(request, user, backend=SIGN_IN_BACKEND)
                messages.success(
                    request,
                    f"Welcome, {user.get_username()}: you joined Context Studio as "
                    f"{invitation.role}.",
                )
                return redirect("profile-list")
        status = 400
    context = {"invitation": invitation, "form": form}
    response = render(request, "profiles/team_join.html", context, status=status)
    add_never_cache_headers(response)
    return response


urlpatterns = [
    path("team/", team_page, name="team"),
    path("team/invite/", team_invite, name="team-invite"),
    path(
        "team/invitations/<int:invitation_id>/revoke/",
        team_invitation_revoke,
        name="team-invitation-revoke",
    ),
    path("team/members/<int:member_id>/role/", team_member_role, name="team-member-role"),
    path("team/members/<int:member_id>/active/", team_member_active, name="team-member-active"),
    path("team/join/<str:token>/", team_join, name="team-join"),
]
