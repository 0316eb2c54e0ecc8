"""GET /metrics: Prometheus text format, counters of this process plus gauges of the store."""

from fastapi import APIRouter, Depends
from fastapi.responses import PlainTextResponse, Response
from weir.platform.api.deps import platform
from weir.platform.observability.metrics import CONTENT_TYPE
from weir.platform.reads import load
from weir.platform.service import Platform

router = APIRouter()


@router.get("/metrics", response_class=PlainTextResponse)  # documents text/plain
async def metrics(weir: Platform = Depends(platform)) -> Response:
    now = weir.clock.now_ms()
    snapshot = await weir.read(lambda conn: load.store_stats(conn, now))
    body = weir.metrics.render(snapshot, len(weir.scheduler.inflight))
    return Response(body, media_type=CONTENT_TYPE)
