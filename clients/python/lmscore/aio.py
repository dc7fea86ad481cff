"""aio.py — the asyncio client (grpc.aio): the same methods as Client, as
coroutines; score_stream returns an async iterator and accepts a sync or an
async iterable of items."""

import grpc

from lmscore import _requests as rq
from lmscore.client import make_credentials
from lmscore.errors import from_rpc_error
from lmscore._pb import health_pb2, health_pb2_grpc
from lmscore.v1 import score_pb2, score_pb2_grpc


async def _batches(items, batch_size):
    """(first index, list) batches of a sync or async iterable."""
    if not hasattr(items, "__aiter__"):
        for done in rq.batches(items, batch_size):
            yield done
        return
    batcher = rq.Batcher(batch_size)
    async for item in items:
        done = batcher.add(item)
        if done:
            yield done
    rest = batcher.take()
    if rest:
        yield rest


class AsyncScoreStream:
    """Async iterator of ItemScore; .summary is set once it is exhausted,
    .request_id (the server's x-request-id) once the iteration began."""

    def __init__(self, call, with_logprobs):
        self._call = call
        self._with_logprobs = with_logprobs
        self.summary = None
        self.request_id = None

    async def __aiter__(self):
        try:
            self.request_id = rq.request_id(await self._call.initial_metadata())
            async for response in self._call:
                if response.HasField("chunk"):
                    for item in rq.chunk_items(response.chunk, self._with_logprobs):
                        yield item
                else:
                    self.summary = rq.stream_summary(response.summary)
        except grpc.aio.AioRpcError as e:
            raise from_rpc_error(e) from None

    def cancel(self):
        self._call.cancel()


class AsyncClient:
    """AsyncClient("host:50051"); use `async with` or await close(). The
    arguments, metadata= included, are Client's."""

    def __init__(self, target="127.0.0.1:50051", *, tls=False, root_certificates=None,
                 round_robin=False, timeout=30.0, options=(), api_key=None, metadata=None):
        opts = rq.channel_options(round_robin, options)
        creds = make_credentials(tls, root_certificates)
        self._channel = (grpc.aio.secure_channel(target, creds, options=opts) if creds
                         else grpc.aio.insecure_channel(target, options=opts))
        self._stub = score_pb2_grpc.ScoreServiceStub(self._channel)
        self._health = health_pb2_grpc.HealthStub(self._channel)
        self.timeout = timeout
        self._metadata = rq.call_metadata(rq.auth_metadata(api_key), metadata)

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()

    async def close(self):
        await self._channel.close()

    async def _call(self, method, request, timeout, metadata):
        """(response, the request id the server answered with)."""
        try:
            call = method(request, timeout=self.timeout if timeout is None else timeout,
                          metadata=rq.call_metadata(self._metadata, metadata))
            response = await call
            return response, rq.request_id(await call.initial_metadata())
        except grpc.aio.AioRpcError as e:
            raise from_rpc_error(e) from None

    async def score(self, query, items, labels, *, apply_softmax=False, item_first=False,
                    return_logprobs=False, algorithm=None, timeout=None, metadata=None):
        request = rq.score_request(query, items, labels, apply_softmax, item_first,
                                   return_logprobs, algorithm)
        response, request_id = await self._call(self._stub.Score, request, timeout, metadata)
        return rq.score_result(response, return_logprobs, request_id)

    def score_as_completed(self, query, items, labels, *, apply_softmax=False,
                           item_first=False, return_logprobs=False, algorithm=None,
                           timeout=None, metadata=None):
        """Like score(), through ScoreStream: an async iterator of ItemScore."""
        request = rq.score_request(query, items, labels, apply_softmax, item_first,
                                   return_logprobs, algorithm)
        call = self._stub.ScoreStream(request,
                                      timeout=self.timeout if timeout is None else timeout,
                                      metadata=rq.call_metadata(self._metadata, metadata))
        return AsyncScoreStream(call, return_logprobs)

    def score_stream(self, query, items, labels, *, apply_softmax=False, item_first=False,
                     return_logprobs=False, algorithm=None, batch_size=256, timeout=None,
                     metadata=None):
        header = rq.items_header(query, labels, apply_softmax, item_first, return_logprobs,
                                 algorithm)

        async def requests():
            yield header
            async for first, batch in _batches(items, batch_size):
                yield rq.items_batch(batch, first)

        call = self._stub.ScoreItems(requests(), timeout=timeout,
                                     metadata=rq.call_metadata(self._metadata, metadata))
        return AsyncScoreStream(call, return_logprobs)

    async def rerank(self, query, documents, *, top_n=None, truncate=None,
                     max_tokens_per_doc=None, max_sequence_tokens=None, truncation_side="right",
                     return_documents=False, timeout=None, metadata=None):
        """As Client.rerank: ranks documents (str) by relevance to query with the server's
        rerank profile: the numbers of its HTTP rerank paths. truncate: None
        for the server's --truncate-documents, True to cut a document too
        long for its prompt (inside its own tokens, to max_tokens_per_doc
        and max_sequence_tokens when given, keeping its start, or its end
        with truncation_side="left"), False to have it refused. Returns a
        RerankResponse."""
        request = rq.rerank_request(query, documents, top_n, truncate, max_tokens_per_doc,
                                    max_sequence_tokens, truncation_side, return_documents)
        response, request_id = await self._call(self._stub.Rerank, request, timeout, metadata)
        return rq.rerank_response(response, return_documents, request_id)

    async def tokenize(self, text, *, add_special_tokens=False, timeout=None, metadata=None):
        request = score_pb2.TokenizeRequest(text=text, add_special_tokens=add_special_tokens)
        response, _ = await self._call(self._stub.Tokenize, request, timeout, metadata)
        return list(response.token_ids)

    async def info(self, *, timeout=None, metadata=None):
        response, _ = await self._call(self._stub.GetModelInfo, score_pb2.GetModelInfoRequest(),
                                       timeout, metadata)
        return response

    async def health(self, service="", *, timeout=None, metadata=None):
        request = health_pb2.HealthCheckRequest(service=service)
        response, _ = await self._call(self._health.Check, request, timeout, metadata)
        return health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)
