"""What the CRUD viewsets of the workspace's entries share: ``EntryViewSet`` (list, read, create,
replace, change and delete on a feature's write services, with ETags and the 404 of an unknown
key), the key's URL pattern, and ``entry_schema`` (their serializers, operation ids and bodies;
``entry_operations`` is the schema alone, for a viewset of some of those actions)."""

import contextlib

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status
from rest_framework.filters import SearchFilter
from rest_framework.response import Response
from rest_framework.reverse import reverse

from profiles.api.base import ApiViewSet
from profiles.api.conditional import none_match_fails, not_modified
from profiles.api.exceptions import or_404
from profiles.api.serializers import entries as s
from profiles.workspace.replica import replica_reads

# Object URLs end without a slash and keys never contain one.
KEY_REGEX = "[^/]+"


class EntryViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    ApiViewSet,
):
    """List, read, create, replace, change and delete one kind of entry, on its services.

    A subclass names its lookups and services; the shape of every answer is here: an object
    with its ``ETag``, 201 with ``Location``, 204 for a delete, the error shape otherwise.
    """

    lookup_field = "key"
    lookup_value_regex = KEY_REGEX
    filter_backends = [SearchFilter]
    #: set with ``serializer_class`` by ``entry_schema``
    update_serializer_class: type[s.EntrySerializer]
    #: what the 404 calls an object ("consumer"), set by ``entry_schema``
    kind = ""
    #: whether GET list and detail may read from a read replica (the material's entries:
    #: every write of theirs moves the counter a replica is checked against)
    replica_reads = True

    def get_serializer_class(self):
        if self.action in ("update", "partial_update"):
            return self.update_serializer_class
        return self.serializer_class

    #: the feature's selectors and ETag: ``(list_all, get_one, etag)``, ``get_one`` given the
    #: lookup under ``lookup_field``'s name (a subclass may override the methods instead)
    reads: tuple = ()
    #: the feature's write services ``(create, update, delete)``, given the lookup the same way
    writes: tuple = ()

    def get_queryset(self):
        return self.reads[0]()

    def lookup(self) -> str:
        return self.kwargs[self.lookup_field]

    def fetch(self, lookup: str):
        """Return the stored object the URL names; raise its model's DoesNotExist."""
        return self.reads[1](**{self.lookup_field: lookup})

    def get_object(self):
        return or_404(f'{self.kind} "{self.lookup()}"', self.fetch, lookup=self.lookup())

    def etag(self, row) -> str:
        return self.reads[2](row)

    def body(self, *, identity: str | None = None) -> dict:
        """Return the request body, checked by the serializer (an object, identity kept)."""
        serializer = self.get_serializer(
            data=self.request.data, context={**self.get_serializer_context(), "identity": identity}
        )
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data

    def answer(self, row, status_code: int = status.HTTP_200_OK) -> Response:
        headers = {"ETag": self.etag(row)}
        if status_code == status.HTTP_201_CREATED:
            headers["Location"] = self.location(row)
        return Response(self.get_serializer(row).data, status=status_code, headers=headers)

    def location(self, row) -> str:
        lookup = getattr(row, self.lookup_field)
        return reverse(f"api:{self.basename}-detail", args=[lookup], request=self.request)

    # -- the actions ------------------------------------------------------------------------

    def list(self, request, *args, **kwargs):
        with self.reading():
            return super().list(request, *args, **kwargs)

    def retrieve(self, request, *args, **kwargs):
        with self.reading():
            return self._retrieve(request)

    def reading(self):
        """The reads of a list or detail: of the material from a read replica when one may
        answer (``profiles.workspace.replica``), else from the primary."""
        return replica_reads() if self.replica_reads else contextlib.nullcontext()

    def _retrieve(self, request):
        row = self.get_object()
        etag = self.etag(row)
        if none_match_fails(request, etag):  # the object's document is the whole answer
            return not_modified(etag)
        return self.answer(row)

    def create(self, request, *args, **kwargs):
        return self.answer(self.service_create(self.body()), status.HTTP_201_CREATED)

    def update(self, request, *args, partial: bool = False, **kwargs):
        self.get_object()  # 404 before the body is looked at
        changes = self.body(identity=self.lookup())
        return self.answer(self.service_update(changes, replace=not partial))

    def destroy(self, request, *args, **kwargs):
        self.get_object()
        self.service_delete()
        return Response(status=status.HTTP_204_NO_CONTENT)

    # -- the feature's write services (on whose behalf: ``author``, ``guarded``) ------------

    def service_create(self, document: dict):
        return self.writes[0](document=document, **self.author())

    def service_update(self, changes: dict, *, replace: bool):
        return self.writes[1](
            **{self.lookup_field: self.lookup()}, changes=changes, replace=replace, **self.guarded()
        )

    def service_delete(self) -> None:
        self.writes[2](**{self.lookup_field: self.lookup()}, **self.guarded())


ENTRY_ACTIONS = ("list", "retrieve", "create", "update", "partial_update", "destroy")
ENTRY_DESCRIPTIONS = {
    "partial_update": "The given fields replace the saved ones (null: back to the default)."
}


def entry_operations(
    tag: str,
    *,
    name: str = "",
    read: type,
    create: type | None = None,
    update: type | None = None,
    actions: tuple[str, ...] = ENTRY_ACTIONS,
    descriptions: dict[str, str] | None = None,
):
    """Return the schema of a viewset of entry ``actions`` (``extend_schema_view``): its
    ``tag``, operation ids ``<name>_<action>`` (``name`` defaults to the tag), bodies
    (``create`` and ``update`` read, ``read`` answers) and the actions' ``descriptions``."""
    name = name or tag
    shapes = {
        "list": {},
        "retrieve": {"responses": {200: read}},
        "create": {"request": create, "responses": {201: read}},
        "update": {"request": update, "responses": {200: read}},
        "partial_update": {"request": update, "responses": {200: read}},
        "destroy": {"responses": {204: None}},
    }
    descriptions = ENTRY_DESCRIPTIONS if descriptions is None else descriptions
    return extend_schema_view(
        **{
            action: extend_schema(
                operation_id=f"{name}_{action}",
                tags=[tag],
                **shapes[action],
                **({"description": descriptions[action]} if action in descriptions else {}),
            )
            for action in actions
        }
    )


def entry_schema(name: str, kind: str, *, create: type, update: type, read: type | None = None):
    """Return the decorator of an entry viewset: what it calls an object (``kind``), its
    serializers (``create`` reads and creates, ``update`` changes) and its schema
    (``entry_operations``)."""
    schema = entry_operations(name, read=read or create, create=create, update=update)

    def decorate(viewset: type) -> type:
        viewset.kind = kind
        viewset.serializer_class, viewset.update_serializer_class = create, update
        return schema(viewset)

    return decorate
