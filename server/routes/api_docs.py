"""``/docs`` (Swagger UI) and ``/redoc`` (ReDoc) served wholly from this host, under a strict Content-Security-Policy.

FastAPI's own pages load their scripts from a CDN, so they stay blank wherever the service has no internet (a lab,
a demo on a laptop). The assets come from the ``fastapi-offline`` package (maintained, it ships Swagger UI 5 and
ReDoc 2); the pages are ours, so that no script runs inline: Swagger UI is started by ``static/swagger-init.js``.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from layersched.server.routes.page_render import render

ASSETS_URL = "/static/api-docs"
OWN_STATIC_URL = "/static/layersched"
# Scripts only from this host, never inline or eval'd. Both UIs set styles from JavaScript (ReDoc's styled-components
# writes <style> elements), hence 'unsafe-inline' for styles alone; ReDoc's search runs in a blob: worker.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; worker-src blob:; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)

router = APIRouter(include_in_schema=False)


def mount_assets(app: FastAPI) -> None:
    """The two folders the pages load from: the package's Swagger UI and ReDoc builds, and our start-up script."""
    vendor = Path(str(files("fastapi_offline") / "static"))
    app.mount(ASSETS_URL, StaticFiles(directory=vendor), name="api-docs-assets")
    own = Path(__file__).resolve().parent.parent / "static"
    app.mount(OWN_STATIC_URL, StaticFiles(directory=own), name="layersched-static")


def _page(request: Request, template: str) -> HTMLResponse:
    context = {"openapi_url": request.app.openapi_url, "assets": ASSETS_URL, "own": OWN_STATIC_URL}
    return render(request, template, context, viewer=None, csp=CSP)


@router.get("/docs", response_class=HTMLResponse)
def swagger_page(request: Request) -> HTMLResponse:
    return _page(request, "swagger.html")


@router.get("/redoc", response_class=HTMLResponse)
def redoc_page(request: Request) -> HTMLResponse:
    return _page(request, "redoc.html")
