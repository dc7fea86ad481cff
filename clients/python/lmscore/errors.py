"""errors.py — typed exceptions for failed calls. Every failure is an
LmscoreError carrying the gRPC code, the server's message and, when the
server sent one, the google.rpc.ErrorInfo reason and field (e.g. reason
"token_id_exceeds_vocab", field "items[3]") and the call's request id; the
subclass says which gRPC code it was."""

import grpc

from lmscore._pb import error_details_pb2, status_pb2
from lmscore._requests import request_id as found_request_id

_DETAILS_KEY = "grpc-status-details-bin"


class LmscoreError(Exception):
    """A call failed. code: grpc.StatusCode; reason/field/domain: the
    ErrorInfo (None when the server sent none); metadata: its full map;
    request_id: the x-request-id the server answered with (None when no
    server answered)."""

    def __init__(self, code, message, reason=None, field=None, domain=None, metadata=None,
                 request_id=None):
        self.code = code
        self.request_id = request_id
        self.message = message
        self.reason = reason
        self.field = field
        self.domain = domain
        self.metadata = dict(metadata or {})
        text = f"{code.name}: {message}"
        if reason:
            text += f" (reason: {reason}" + (f", field: {field}" if field else "") + ")"
        super().__init__(text)


class InvalidArgumentError(LmscoreError):
    """The request is malformed; reason says how (see the proto)."""


class ResourceExhaustedError(LmscoreError):
    """The server is overloaded (queue_full) or a message is too large."""


class DeadlineExceededError(LmscoreError):
    """The call's deadline passed before the server answered."""


class UnavailableError(LmscoreError):
    """No server could be reached, or it is draining for shutdown."""


class NotFoundError(LmscoreError):
    """The server does not know the service or method asked for."""


class CancelledError(LmscoreError):
    """The call was cancelled."""


class UnauthenticatedError(LmscoreError):
    """The server wants an API key (missing_api_key) or not this one
    (invalid_api_key)."""


_BY_CODE = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgumentError,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhaustedError,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceededError,
    grpc.StatusCode.UNAVAILABLE: UnavailableError,
    grpc.StatusCode.NOT_FOUND: NotFoundError,
    grpc.StatusCode.CANCELLED: CancelledError,
    grpc.StatusCode.UNAUTHENTICATED: UnauthenticatedError,
}


def _error_info(trailing_metadata):
    for key, value in trailing_metadata or ():
        if key != _DETAILS_KEY:
            continue
        status = status_pb2.Status.FromString(value)
        for detail in status.details:
            info = error_details_pb2.ErrorInfo()
            if detail.Is(info.DESCRIPTOR):
                detail.Unpack(info)
                return info
    return None


def from_rpc_error(error, trailing_metadata=None):
    """The typed exception for a grpc.RpcError (sync) or grpc.aio.AioRpcError;
    pass trailing_metadata when it was fetched separately (asyncio)."""
    code = error.code()
    if trailing_metadata is None:
        trailing_metadata = error.trailing_metadata()
    # a refusal before the call began has only trailers
    request_id = found_request_id(error.initial_metadata(), trailing_metadata)
    info = _error_info(trailing_metadata)
    cls = _BY_CODE.get(code, LmscoreError)
    if info is None:
        return cls(code, error.details(), request_id=request_id)
    return cls(code, error.details(), reason=info.reason, field=info.metadata.get("field"),
               domain=info.domain, metadata=info.metadata, request_id=request_id)
