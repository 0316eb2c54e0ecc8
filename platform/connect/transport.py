"""The executor's transport to Connect workers: a call over the gateway, its reply read back
into the HTTP response the same SDK would have sent (docs/protocol.md §13.4)."""

from weir.platform.connect.gateway import Gateway, NoAnswer, Target
from weir.platform.connect.wire import Reply, ReplyStatus
from weir.platform.executor.http.client import TransportError
from weir.platform.executor.response import RawResponse
from weir.platform.executor.transport import AppRequest

STATUS = {ReplyStatus.DONE: 200, ReplyStatus.NOT_COMPLETED: 206, ReplyStatus.ERROR: 500}


class ConnectTransport:
    def __init__(self, gateway: Gateway, timeout_s: float) -> None:
        self.gateway, self.timeout_s = gateway, timeout_s

    async def send(self, request: AppRequest) -> RawResponse:
        fn = request.fn
        target = Target(
            app_id=fn.app_id,
            function_id=fn.id,
            function_slug=fn.slug,
            step_id=request.step_id,
            run_id=request.run_id,
            job_id=request.job_id,
        )
        try:
            reply = await self.gateway.call(target, request.body, self.timeout_s)
        except NoAnswer as exc:
            raise TransportError(str(exc)) from None  # the sentence is the whole story
        return as_response(reply)


def as_response(reply: Reply) -> RawResponse:
    """The reply as the HTTP answer: its status, the SDK's headers, the same body."""
    headers = {
        "content-type": "application/json",
        "x-inngest-sdk": f"inngest-py:v{reply.sdk_version or '0'}",
        "x-inngest-req-version": str(reply.request_version),
    }
    if reply.no_retry:
        headers["x-inngest-no-retry"] = "true"
    if reply.retry_after:
        headers["retry-after"] = reply.retry_after
    status = STATUS.get(ReplyStatus(reply.status), 500) if reply.status in STATUS else 500
    return RawResponse(status, headers, reply.body)
