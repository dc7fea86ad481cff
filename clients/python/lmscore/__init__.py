"""lmscore — a Python client of the lmscore scoring service (lmscore.v1).

    from lmscore import Client
    with Client("127.0.0.1:50051") as client:
        result = client.score("Is it good?", [" yes", " no"], labels=[" yes"])

See clients/python/README.md."""

from lmscore._requests import (ItemScore, RerankResponse, RerankResult, ScoreResult,
                               ServerTiming, StreamSummary, Usage)
from lmscore.aio import AsyncClient, AsyncScoreStream
from lmscore.client import Client, ScoreStream
from lmscore.errors import (CancelledError, DeadlineExceededError, InvalidArgumentError,
                            LmscoreError, NotFoundError, ResourceExhaustedError,
                            UnauthenticatedError, UnavailableError)

__all__ = [
    "AsyncClient", "AsyncScoreStream", "CancelledError", "Client", "DeadlineExceededError",
    "InvalidArgumentError", "ItemScore", "LmscoreError", "NotFoundError", "RerankResponse",
    "RerankResult", "ResourceExhaustedError", "ScoreResult", "ScoreStream", "ServerTiming", "StreamSummary",
    "UnauthenticatedError", "UnavailableError", "Usage",
]
