"""Material: consumers, layers and their items (SPEC §2), and the item change log."""

# ruff: noqa: DJ001

from django.db import models
from django.db.models import Q
from simple_history.models import HistoricalRecords

from profiles.models.base import (
    HISTORY_EXCLUDED,
    Availability,
    Positioned,
    RenderFormat,
    Tracked,
    _choices_check,
    key_validator,
    new_token,
)


class Consumer(Tracked, Positioned):
    """Who receives the context, with its render settings (SPEC §1, §2 ``consumers[]``)."""

    key = models.CharField(max_length=64, unique=True, validators=[key_validator])
    name = models.TextField(blank=True, default="")
    # NULL = not given in the document (renders as markdown without dates).
    render_format = models.CharField(
        max_length=16, choices=RenderFormat.choices, null=True, blank=True
    )
    include_currentness = models.BooleanField(null=True, blank=True)

    history = HistoricalRecords(excluded_fields=HISTORY_EXCLUDED)

    class Meta:
        ordering = ["position", "id"]
        constraints = [
            models.CheckConstraint(
                condition=_choices_check("render_format", RenderFormat, nullable=True),
                name="consumer_render_format_valid",
            ),
        ]

    def __str__(self) -> str:
        return self.key

    def save(self, *args, **kwargs):
        if self._state.adding and not self.position:
            self.position = self._next_position(Consumer.objects.all())
        super().save(*args, **kwargs)


class Layer(Tracked, Positioned):
    """A named source of material shared by all profiles (SPEC §2 ``layers[]``)."""

    key = models.CharField(max_length=64, unique=True, validators=[key_validator])
    name = models.TextField(blank=True, default="")
    description = models.TextField(blank=True, default="")
    availability = models.CharField(
        max_length=16, choices=Availability.choices, default=Availability.AUTO
    )
    applies_to_objectives = models.JSONField(default=list, blank=True)
    applies_to_consumers = models.JSONField(default=list, blank=True)
    requires_input = models.JSONField(default=list, blank=True)
    # metadata field -> input key; always considered in field-name order (SPEC §2.1).
    item_filter = models.JSONField(default=dict, blank=True)
    # Staff decide (like an environment's protection): item writes of a governed layer that a
    # protected profile reads go through change requests (profiles.versioning.protection).
    # Not part of the SPEC §2 document: the engine does not read it.
    governed = models.BooleanField(
        default=False,
        help_text="Item creates, edits and deletes need a change request while a profile of a "
        "protected environment reads this layer. Staff only.",
    )
    # Changes in the transaction of any write to the layer or its items (the write services),
    # so a compiled layer is reused exactly while its material is unchanged.
    content_token = models.CharField(max_length=32, default=new_token, editable=False)
    # How many items the layer has, kept in the transaction of every item write (the
    # write services, through profiles.workspace.writing.workspace_changed): a served layer's
    # total (SPEC §4.2 ``available.items``) without counting a million rows.
    items_counted = models.PositiveIntegerField(default=0, editable=False)
    # The metadata fields whose ItemKey rows are complete for every item: the itemFilter's
    # fields once the keys of a changed filter are written (profiles.workspace.derived).
    keyed_fields = models.JSONField(default=list, blank=True, editable=False)

    history = HistoricalRecords(
        excluded_fields=[*HISTORY_EXCLUDED, "content_token", "items_counted", "keyed_fields"]
    )

    class Meta:
        ordering = ["position", "id"]
        constraints = [
            models.CheckConstraint(
                condition=_choices_check("availability", Availability, nullable=False),
                name="layer_availability_valid",
            ),
        ]

    def __str__(self) -> str:
        return self.key

    def save(self, *args, **kwargs):
        if self._state.adding and not self.position:
            self.position = self._next_position(Layer.objects.all())
        super().save(*args, **kwargs)

    @property
    def display_name(self) -> str:
        return " ".join(self.name.split()) or self.key


class Item(Positioned):
    """One piece of material of a layer; ``path`` is unique in its layer and may contain '/'."""

    # Indexed by (layer, path) and (layer, position): a third index on layer alone would only
    # cost every write (a bulk ingest of a million items pays each index a million times).
    layer = models.ForeignKey(Layer, on_delete=models.CASCADE, related_name="items", db_index=False)
    path = models.CharField(max_length=255)
    title = models.TextField(blank=True, default="")
    body = models.TextField(blank=True, default="")
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    # An item's history is read by the item's id, never by layer.
    history = HistoricalRecords(excluded_fields=HISTORY_EXCLUDED, no_db_index=["layer"])

    class Meta:
        ordering = ["layer_id", "position", "id"]
        indexes = [models.Index(fields=["layer", "position"], name="item_layer_position")]
        constraints = [
            models.UniqueConstraint(fields=["layer", "path"], name="item_path_unique_in_layer"),
            models.CheckConstraint(condition=~Q(path=""), name="item_path_not_empty"),
        ]

    def __str__(self) -> str:
        return f"{self.layer.key}/{self.path}" if self.layer_id else self.path

    def save(self, *args, **kwargs):
        if self._state.adding and not self.position and self.layer_id:
            self.position = self._next_position(Item.objects.filter(layer_id=self.layer_id))
        super().save(*args, **kwargs)

    @property
    def ref(self) -> str:
        return f"{self.layer.key}/{self.path}"


class ItemChange(models.Model):
    """One entry of the item change log: which item of which layer a write changed.

    Written in the transaction of the write, under the writers' lock, so the ids grow in
    commit order. A worker keeping a compiled workspace reads the entries after the last one
    it applied and re-reads just those items (``profiles.workspace.item_change_log``,
    ``profiles.workspace.cache``).
    ``path`` is None when the write changed the layer's items wholesale (an import): the
    layer is read again in full. Old entries are pruned; the first entry left after pruning
    is marked ``after_prune``, so a reader knows entries before it are gone.
    """

    class Op(models.TextChoices):
        CREATE = "create", "item created"
        UPDATE = "update", "item changed"
        DELETE = "delete", "item deleted"
        LAYER = "layer", "layer's items rewritten"

    id = models.BigAutoField(primary_key=True)
    # Not a foreign key: a deleted layer keeps its entries, so readers' positions stay valid.
    layer_id = models.BigIntegerField()
    path = models.CharField(max_length=255, null=True, blank=True)
    op = models.CharField(max_length=8, choices=Op.choices)
    after_prune = models.BooleanField(default=False)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"#{self.id} {self.op} {self.layer_id}/{self.path or '*'}"


class ItemTerms(models.Model):
    """An item's analysed terms (SPEC §5), computed by the engine when the item is written
    (``resolver.analysis``), so that neither a worker's start nor a per-request fetch
    tokenizes text. ``analyser`` is the engine's ``ANALYSER_VERSION`` that counted them:
    terms of another version are not used, and a background task recomputes them.

    Derived data, one row per item, kept by ``profiles.workspace.derived`` in the transaction
    of every item write; keyed by (layer, path) because a deleted item's row is found by
    what the write names. ``item_id`` is the item's row (not a foreign key: the bulk writers
    delete items with plain SQL, and this row goes in the same transaction).
    """

    # Indexed by (layer, path) (the unique constraint): not on layer alone.
    layer = models.ForeignKey(Layer, on_delete=models.CASCADE, related_name="+", db_index=False)
    path = models.CharField(max_length=255)
    item_id = models.BigIntegerField(db_index=True)
    # The item's ``updated_at`` when these were computed: a row whose item was written since
    # (another id or another date) is out of date.
    item_updated_at = models.DateTimeField()
    analyser = models.PositiveSmallIntegerField()
    # The packed term counts (``resolver.analysis.pack_terms``: the counts as 32-bit integers,
    # the terms as one string), which the engine reads in bulk without a Python object per
    # term; the document length is the counts' sum. A damaged value is tokenized instead.
    packed = models.BinaryField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["layer", "path"], name="item_terms_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.layer_id}/{self.path}"


class ItemKey(models.Model):
    """One value of an item's ``itemFilter`` field: the index a served layer's per-request
    fetch reads (``profiles.workspace.served``) for one customer's items.

    ``value`` is the canonical string of the metadata value (SPEC §4.2; one row per element
    of a list), cut to ``ItemKey.VALUE_CHARS`` characters: a lookup by the cut input value
    finds a superset of the matching items, and the engine applies the filter exactly. Rows
    exist for the fields of the layer's ``itemFilter`` (``Layer.keyed_fields``), written with
    the item in the same transaction (``profiles.workspace.derived``).
    """

    VALUE_CHARS = 200

    # Indexed by (layer, field, value) and (layer, path): not on layer alone. The lookup
    # index also holds ``item_id`` and ``id`` on PostgreSQL (not in its key): a served read
    # (the customer's item ids, and its stamp's count and highest id) is then an index-only
    # scan, not a heap page per key row (SQLite has no such index: it reads the rows).
    layer = models.ForeignKey(Layer, on_delete=models.CASCADE, related_name="+", db_index=False)
    field = models.CharField(max_length=255)
    value = models.CharField(max_length=VALUE_CHARS)
    path = models.CharField(max_length=255)
    item_id = models.BigIntegerField()

    class Meta:
        indexes = [
            models.Index(
                fields=["layer", "field", "value"],
                include=["item_id", "id"],
                name="item_key_lookup_cover",
            ),
            models.Index(fields=["layer", "path"], name="item_key_path"),
        ]

    def __str__(self) -> str:
        return f"{self.layer_id}/{self.path} {self.field}={self.value}"
