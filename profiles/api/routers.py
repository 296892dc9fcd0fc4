"""The router of ``/api/v1/``: collections end with a slash, objects do not, so an item path
(which may contain ``/``) maps to its URL unchanged. Each collection also answers without its
slash (a POST cannot be redirected); that twin is left out of the schema."""

from django.urls import re_path
from drf_spectacular.utils import extend_schema
from rest_framework.routers import DynamicRoute, Route, SimpleRouter


class ApiRouter(SimpleRouter):
    routes = [
        Route(
            url=r"^{prefix}/$",
            mapping={"get": "list", "post": "create"},
            name="{basename}-list",
            detail=False,
            initkwargs={"suffix": "List"},
        ),
        Route(
            url=r"^{prefix}/{lookup}$",
            mapping={
                "get": "retrieve",
                "put": "update",
                "patch": "partial_update",
                "delete": "destroy",
            },
            name="{basename}-detail",
            detail=True,
            initkwargs={"suffix": "Instance"},
        ),
        # @action methods (safe change: change-requests/<id>/approve, versions/<n>/restore).
        DynamicRoute(
            url=r"^{prefix}/{lookup}/{url_path}$",
            name="{basename}-{url_name}",
            detail=True,
            initkwargs={},
        ),
    ]

    def get_urls(self):
        urls = super().get_urls()
        slashless = []
        for prefix, viewset, basename in self.registry:
            mapping = self.get_method_map(viewset, self.routes[0].mapping)
            if not mapping:
                continue
            twin = extend_schema(exclude=True)(type(viewset.__name__ + "Slashless", (viewset,), {}))
            view = twin.as_view(mapping, basename=basename, detail=False, suffix="List")
            slashless.append(re_path(rf"^{prefix}$", view))
        return urls + slashless
