"""client.py — the synchronous client: one grpc channel, every ScoreService
method, health checks; failures raise lmscore.errors types."""

import grpc

from lmscore import _requests as rq
from lmscore.errors import from_rpc_error
from lmscore._pb import health_pb2, health_pb2_grpc
from lmscore.v1 import score_pb2, score_pb2_grpc


def make_credentials(tls, root_certificates):
    """None (plaintext) or SSL channel credentials."""
    if not tls and root_certificates is None:
        return None
    return grpc.ssl_channel_credentials(root_certificates=root_certificates)


class ScoreStream:
    """The items' scores as the server sends them (any order: see
    ItemScore.index); after the iteration, .summary holds the StreamSummary;
    once the iteration began, .request_id the server's x-request-id."""

    def __init__(self, responses, with_logprobs):
        self._responses = responses
        self._with_logprobs = with_logprobs
        self.summary = None
        self.request_id = None

    def __iter__(self):
        try:
            self.request_id = rq.request_id(self._responses.initial_metadata())
            for response in self._responses:
                if response.HasField("chunk"):
                    yield from rq.chunk_items(response.chunk, self._with_logprobs)
                else:
                    self.summary = rq.stream_summary(response.summary)
        except grpc.RpcError as e:
            raise from_rpc_error(e) from None

    def cancel(self):
        self._responses.cancel()


class Client:
    """Client("host:50051") — plaintext unless tls=True or root_certificates
    (PEM bytes) is given; round_robin=True spreads calls over every address
    the target resolves to (e.g. dns:///lmscored-headless.ns.svc:50051);
    api_key (default $LMSCORE_API_KEY) and metadata ((key, value) pairs or
    a mapping, e.g. {"x-tenant": "blue"}) are sent with every call; each
    method's metadata= adds to them for its call (e.g. {"x-request-id":
    "job-42"}, which the server's logs then name the call by)."""

    def __init__(self, target="127.0.0.1:50051", *, tls=False, root_certificates=None,
                 round_robin=False, timeout=30.0, options=(), api_key=None, metadata=None):
        opts = rq.channel_options(round_robin, options)
        creds = make_credentials(tls, root_certificates)
        self._channel = (grpc.secure_channel(target, creds, options=opts) if creds
                         else grpc.insecure_channel(target, options=opts))
        self._stub = score_pb2_grpc.ScoreServiceStub(self._channel)
        self._health = health_pb2_grpc.HealthStub(self._channel)
        self.timeout = timeout
        self._metadata = rq.call_metadata(rq.auth_metadata(api_key), metadata)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self._channel.close()

    def _call(self, method, request, timeout, metadata):
        """(response, the request id the server answered with)."""
        try:
            response, call = method.with_call(
                request, timeout=self.timeout if timeout is None else timeout,
                metadata=rq.call_metadata(self._metadata, metadata))
        except grpc.RpcError as e:
            raise from_rpc_error(e) from None
        return response, rq.request_id(call.initial_metadata())

    def score(self, query, items, labels, *, apply_softmax=False, item_first=False,
              return_logprobs=False, algorithm=None, timeout=None, metadata=None):
        """Scores items (str or token-id sequences, like the query) against
        the query for each label (token ids or single-token texts)."""
        request = rq.score_request(query, items, labels, apply_softmax, item_first,
                                   return_logprobs, algorithm)
        response, request_id = self._call(self._stub.Score, request, timeout, metadata)
        return rq.score_result(response, return_logprobs, request_id)

    def score_as_completed(self, query, items, labels, *, apply_softmax=False,
                           item_first=False, return_logprobs=False, algorithm=None,
                           timeout=None, metadata=None):
        """Like score(), but through the server-streaming ScoreStream call:
        returns a ScoreStream yielding each ItemScore as its chunk finishes."""
        request = rq.score_request(query, items, labels, apply_softmax, item_first,
                                   return_logprobs, algorithm)
        responses = self._stub.ScoreStream(request,
                                           timeout=self.timeout if timeout is None else timeout,
                                           metadata=rq.call_metadata(self._metadata, metadata))
        return ScoreStream(responses, return_logprobs)

    def score_stream(self, query, items, labels, *, apply_softmax=False, item_first=False,
                     return_logprobs=False, algorithm=None, batch_size=256, timeout=None,
                     metadata=None):
        """Scores an iterable of items (consumed lazily, sent in batches of
        batch_size) through the bidirectional ScoreItems call; returns a
        ScoreStream to iterate while items are still being sent."""
        header = rq.items_header(query, labels, apply_softmax, item_first, return_logprobs,
                                 algorithm)

        def requests():
            yield header
            for first, batch in rq.batches(items, batch_size):
                yield rq.items_batch(batch, first)

        responses = self._stub.ScoreItems(requests(), timeout=timeout,
                                          metadata=rq.call_metadata(self._metadata, metadata))
        return ScoreStream(responses, return_logprobs)

    def rerank(self, query, documents, *, top_n=None, truncate=None, max_tokens_per_doc=None,
               max_sequence_tokens=None, truncation_side="right", return_documents=False,
               timeout=None, metadata=None):
        """Ranks documents (str) by relevance to query with the server's
        rerank profile: the numbers of its HTTP rerank paths. truncate: None
        for the server's --truncate-documents, True to cut a document too
        long for its prompt (inside its own tokens, to max_tokens_per_doc
        and max_sequence_tokens when given, keeping its start, or its end
        with truncation_side="left"), False to have it refused. Returns a
        RerankResponse."""
        request = rq.rerank_request(query, documents, top_n, truncate, max_tokens_per_doc,
                                    max_sequence_tokens, truncation_side, return_documents)
        response, request_id = self._call(self._stub.Rerank, request, timeout, metadata)
        return rq.rerank_response(response, return_documents, request_id)

    def tokenize(self, text, *, add_special_tokens=False, timeout=None, metadata=None):
        request = score_pb2.TokenizeRequest(text=text, add_special_tokens=add_special_tokens)
        return list(self._call(self._stub.Tokenize, request, timeout, metadata)[0].token_ids)

    def info(self, *, timeout=None, metadata=None):
        """The GetModelInfoResponse message: model, limits, counters."""
        return self._call(self._stub.GetModelInfo, score_pb2.GetModelInfoRequest(), timeout,
                          metadata)[0]

    def health(self, service="", *, timeout=None, metadata=None):
        """The serving status name, e.g. "SERVING"."""
        request = health_pb2.HealthCheckRequest(service=service)
        response, _ = self._call(self._health.Check, request, timeout, metadata)
        return health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)
