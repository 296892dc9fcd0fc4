"""Consumers, layers and items over the API: entry viewsets on the material services (an
item's URL ends with its path, slashes and all), and a layer's bulk ingest."""

from django.http import Http404
from drf_spectacular.utils import (
    OpenApiParameter,
    PolymorphicProxySerializer,
    extend_schema,
    extend_schema_view,
)
from rest_framework.response import Response
from rest_framework.reverse import reverse

from profiles.api.base import ApiView, invalid
from profiles.api.entries import EntryViewSet, entry_schema
from profiles.api.exceptions import ApiError, not_found, or_404
from profiles.api.filters import ItemSearchFilter, MetadataFilter, query_boolean
from profiles.api.import_export import job_response, job_shown, queue_full_response
from profiles.api.parsers import BATCH_PARSERS, BatchText
from profiles.api.serializers import material as s
from profiles.api.serializers.examples import request_example
from profiles.api.serializers.import_export import BulkJobSerializer
from profiles.api.throttling import ResolutionRateThrottle
from profiles.import_export.job_status import bulk_job_document, import_job_get
from profiles.import_export.jobs import ImportQueueFull, bulk_job_start
from profiles.material.bulk_ingest import (
    BatchNotReadable,
    BatchTooLarge,
    bulk_ingest_parse,
    items_bulk_ingest,
)
from profiles.material.consumers import consumer_create, consumer_delete, consumer_update
from profiles.material.items import item_create, item_delete, item_update
from profiles.material.layers import layer_create, layer_delete, layer_update
from profiles.models import ImportJob, Layer
from profiles.safechange.layer_removal import layer_delete_removing_rules
from profiles.workspace import selectors
from profiles.workspace.concurrency import consumer_etag, item_etag, layer_etag
from profiles.workspace.origin import BULK as BULK_ORIGIN
from profiles.workspace.permissions import (
    READ_CONFIG,
    READ_MATERIAL,
    WRITE_MATERIAL,
    WRITE_RULES,
    capability_permission,
    request_can,
)

ReadConfigWriteMaterial = capability_permission(READ_CONFIG, unsafe=WRITE_MATERIAL)


@entry_schema(
    "consumers", "consumer", create=s.ConsumerSerializer, update=s.ConsumerUpdateSerializer
)
class ConsumerViewSet(EntryViewSet):
    permission_classes = [ReadConfigWriteMaterial]
    reads = (selectors.consumer_list, selectors.consumer_get, consumer_etag)
    writes = (consumer_create, consumer_update, consumer_delete)
    search_fields = ["key", "name"]


REMOVE_RULES = "removeRules"


@extend_schema_view(
    destroy=extend_schema(
        parameters=[
            OpenApiParameter(
                REMOVE_RULES,
                bool,
                description="`true`: first remove the layer's rule from every profile that has "
                "one (each profile back on the default rule, a new version each), then delete "
                "the layer, all in one transaction (needs WRITE_RULES as well as "
                "WRITE_MATERIAL). Without it, a layer with rules in profiles is refused (409). "
                "Where a profile affected is in a protected environment, nothing is written: "
                "409 `CHANGE_REQUEST_REQUIRED` (propose the set `[{kind: profile, op: update, "
                "key, value: {rules: {<layer>: null}}}…, {kind: layer, op: delete, key}]`).",
            )
        ]
    )
)
@entry_schema("layers", "layer", create=s.LayerSerializer, update=s.LayerUpdateSerializer)
class LayerViewSet(EntryViewSet):
    permission_classes = [ReadConfigWriteMaterial]
    reads = (selectors.layer_list, selectors.layer_get, layer_etag)
    search_fields = ["key", "name", "description"]

    def service_create(self, document):
        governed = bool(document.pop("governed", False))
        return layer_create(
            document=document,
            governed=governed,
            api_key=self.request.auth,
            **self.author(),
        )

    def service_update(self, changes, *, replace):
        governed = changes.pop("governed", None)
        return layer_update(
            key=self.lookup(),
            changes=changes,
            replace=replace,
            governed=governed,
            api_key=self.request.auth,
            **self.guarded(),
        )

    def service_delete(self):
        if not query_boolean(self.request.query_params, REMOVE_RULES):
            layer_delete(key=self.lookup(), **self.guarded())
            return
        if not request_can(self.request, WRITE_RULES):
            raise ApiError(
                403,
                "PERMISSION_DENIED",
                "removing the layer's rules from profiles needs the WRITE_RULES permission too",
                REMOVE_RULES,
            )
        # The studio's "Remove its rules and delete", through the same service; where
        # protection asks for a change request, 409 CHANGE_REQUEST_REQUIRED as every write.
        layer_delete_removing_rules(key=self.lookup(), **self.guarded())


@entry_schema("items", "item", create=s.ItemSerializer, update=s.ItemUpdateSerializer)
class ItemViewSet(EntryViewSet):
    """The items of the layer ``key``; an item's URL ends with its path (slashes and all)."""

    permission_classes = [capability_permission(READ_MATERIAL, unsafe=WRITE_MATERIAL)]
    lookup_field = "path"
    lookup_value_regex = ".+"
    filter_backends = [ItemSearchFilter, MetadataFilter]
    search_fields = ["path", "title", "body"]

    def layer(self) -> Layer:
        if not hasattr(self, "_layer"):
            key = self.kwargs["key"]
            self._layer = or_404(f'layer "{key}"', selectors.layer_get, key=key)
        return self._layer

    def get_queryset(self):
        return selectors.item_list(layer=self.layer())

    def paginate_queryset(self, queryset):
        page = super().paginate_queryset(queryset)
        layer = self.layer()
        for item in page if page is not None else []:
            item.layer = layer
        return page

    def fetch(self, lookup):
        return selectors.item_get(layer=self.layer(), path=lookup)

    def get_object(self):
        self.layer()
        return super().get_object()

    def etag(self, item):
        return item_etag(item)

    def location(self, item):
        return reverse("api:item-detail", args=[item.layer.key, item.path], request=self.request)

    def service_create(self, document):
        return item_create(layer=self.layer().key, document=document, **self.author())

    def service_update(self, changes, *, replace):
        return item_update(
            layer=self.layer().key,
            path=self.lookup(),
            changes=changes,
            replace=replace,
            **self.guarded(),
        )

    def service_delete(self):
        item_delete(layer=self.layer().key, path=self.lookup(), **self.guarded())


BULK_EXAMPLE = [
    {
        "op": "upsert",
        "item": {
            "path": "T-1042",
            "title": "Refund not received",
            "body": "The card refund from 3 November has not arrived.",
            "metadata": {"customer_id": "C-1001", "updated_at": "2026-11-28"},
        },
    },
    {"op": "delete", "path": "T-0007"},
]


@extend_schema(tags=["items"])
class ItemBulkView(ApiView):
    """Upsert and delete many items of one layer, all or nothing (a helpdesk sync)."""

    permission_classes = [capability_permission(READ_MATERIAL, unsafe=WRITE_MATERIAL)]
    parser_classes = BATCH_PARSERS
    throttle_classes = [ResolutionRateThrottle]
    throttle_scope = "bulk"

    @extend_schema(
        operation_id="items_bulk",
        summary="Upsert and delete many items of a layer (bulk ingest)",
        description=(
            'A batch of operations, applied all or nothing: `{"op": "upsert", "item": '
            "{...}}` makes the item at `item.path` exactly this item (created, or replaced: "
            'fields left out go back to their defaults); `{"op": "delete", "path": '
            '"..."}` deletes it (a path not stored: nothing to do). A plain item object '
            "means an upsert. Send a JSON array (`application/json`) or NDJSON "
            "(`application/x-ndjson`, one operation a line, blank lines skipped). "
            "Idempotent by path: items already equal are not written, so the same batch sent "
            "again answers with everything `unchanged` and records nothing. Every line is "
            "validated as a single item write is; one bad line (400 `INVALID_WORKSPACE`, "
            "each issue with the operation's path `[16].item.metadata`, its `line` and "
            "`column`) or a path given twice writes nothing. At most `BULK_INGEST_MAX_LINES` "
            "operations (10,000 by default) a request: a larger batch is refused (413 "
            "`PAYLOAD_TOO_LARGE`), split it. A governed layer that protected profiles read "
            "answers 409 `CHANGE_REQUEST_REQUIRED`, as its single item writes do. Throttled "
            "(scope `bulk`).\n\n"
            "With `background=true` the batch (up to `BULK_INGEST_JOB_MAX_LINES` operations, "
            "1,000,000 by default) becomes a job: 202 with the job, whose `url` (also the "
            "`Location` header) tells its phase, progress and summary. The job checks every "
            "line first (a bad line: the job fails, nothing written), then writes the batch "
            "`BULK_INGEST_MAX_LINES` operations at a time, each part in its own transaction; "
            "a job that stops half way says how many operations were applied, and sending "
            "the batch again finishes it."
        ),
        parameters=[
            OpenApiParameter(
                "background",
                bool,
                description="true: run the batch as a background job with progress (202).",
            )
        ],
        request=PolymorphicProxySerializer(
            component_name="BulkOperation",
            serializers={"upsert": s.BulkUpsertSerializer, "delete": s.BulkDeleteSerializer},
            resource_type_field_name="op",
            many=True,
        ),
        responses={200: s.BulkIngestSummarySerializer, 202: BulkJobSerializer},
        examples=[
            request_example("An upsert and a delete", BULK_EXAMPLE),
        ],
    )
    def post(self, request, key):
        if not selectors.layer_exists(key=key):
            raise not_found(f'layer "{key}"')
        text = request.data
        if not isinstance(text, BatchText):
            raise invalid("", "send the batch as a JSON array or NDJSON")
        if query_boolean(request.query_params, "background"):
            return self._background(request, key, text)
        try:
            operations = bulk_ingest_parse(text=str(text), ndjson=text.ndjson, layer=key)
        except BatchNotReadable as exc:
            raise invalid("", str(exc)) from None
        except BatchTooLarge as exc:
            raise ApiError(413, "PAYLOAD_TOO_LARGE", str(exc), "", maxLines=exc.limit) from None
        try:
            summary = items_bulk_ingest(
                layer=key, operations=operations, user=request.user, origin=BULK_ORIGIN
            )
        except Layer.DoesNotExist as exc:  # deleted since the check
            raise not_found(f'layer "{key}"') from exc
        return Response(s.BulkIngestSummarySerializer(summary.as_dict()).data)

    def _background(self, request, key: str, text: BatchText) -> Response:
        try:
            job = bulk_job_start(
                layer=key,
                text=str(text),
                ndjson=text.ndjson,
                user=request.user,
                key=request.auth,
            )
        except ImportQueueFull as exc:
            return queue_full_response(exc)
        return bulk_job_response(request, job, status=202)


def bulk_job_response(request, job: ImportJob, status: int = 200) -> Response:
    url = reverse("api:item-bulk-job", args=[job.layer, job.pk], request=request)
    return job_response(job, bulk_job_document, url=url, status=status)


@extend_schema(tags=["items"])
class ItemBulkJobView(ApiView):
    """A background bulk ingest job of a layer."""

    permission_classes = [capability_permission(WRITE_MATERIAL)]

    @extend_schema(
        operation_id="items_bulk_job",
        summary="Status, progress and summary of a background bulk ingest",
        responses={200: BulkJobSerializer},
    )
    def get(self, request, key, job_id):
        job = import_job_get(job_id=job_id, kind=ImportJob.Kind.BULK)
        if not job_shown(request, job) or job.layer != key:
            raise Http404("no such bulk ingest job")
        return bulk_job_response(request, job)
