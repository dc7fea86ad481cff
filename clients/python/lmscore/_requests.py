"""_requests.py — Python values to lmscore.v1 messages and back, shared by
the sync and asyncio clients: queries/items as str or token-id sequences,
labels as ids or single-token texts, results as plain dataclasses."""

import os
from dataclasses import dataclass
from typing import List, Optional, Sequence, Union

from lmscore.v1 import score_pb2

Text = str
TokenIds = Sequence[int]
InputLike = Union[Text, TokenIds]

ALGORITHMS = {
    None: score_pb2.ALGORITHM_UNSPECIFIED,
    "auto": score_pb2.ALGORITHM_UNSPECIFIED,
    "serial": score_pb2.ALGORITHM_SERIAL,
    "packed_dense": score_pb2.ALGORITHM_PACKED_DENSE,
    "packed_segment": score_pb2.ALGORITHM_PACKED_SEGMENT,
    "prefill_extend": score_pb2.ALGORITHM_PREFILL_EXTEND,
}
_ALGORITHM_NAMES = {v: k for k, v in ALGORITHMS.items() if k}
_ALGORITHM_NAMES[score_pb2.ALGORITHM_UNSPECIFIED] = "auto"


@dataclass
class Usage:
    prompt_tokens: int
    computed_tokens: int
    cached_tokens: int


@dataclass
class ServerTiming:
    """Where the call's time went inside the server, in seconds: waiting for
    an engine worker, preparing the input (tokenizing), in the engine."""
    queue_s: float
    prepare_s: float
    engine_s: float


@dataclass
class ScoreResult:
    """scores[i][j]: item i, label j (exp(logprob), or the softmax over the
    labels when apply_softmax); logprobs likewise when return_logprobs;
    request_id: the x-request-id the server answered with (the one sent, or
    the one it made), which its logs name the call by."""
    scores: List[List[float]]
    logprobs: Optional[List[List[float]]]
    label_token_ids: List[int]
    algorithm: str
    algorithm_reason: str
    usage: Usage
    timing: ServerTiming
    request_id: Optional[str] = None


@dataclass
class ItemScore:
    """One item's scores from a stream; index is its position in the input."""
    index: int
    scores: List[float]
    logprobs: Optional[List[float]] = None


@dataclass
class StreamSummary:
    item_count: int
    label_token_ids: List[int]
    algorithm: str
    algorithm_reason: str
    usage: Usage
    timing: ServerTiming


@dataclass
class RerankResult:
    """One ranked document: index, its place in the documents sent;
    relevance_score, the HTTP rerank paths' (the same float); log_odds,
    TEI's raw score; document, with return_documents; tokens_kept and
    tokens_dropped, set (non-zero) only for a document that was cut."""
    index: int
    relevance_score: float
    log_odds: float
    document: Optional[str] = None
    tokens_kept: int = 0
    tokens_dropped: int = 0


@dataclass
class RerankResponse:
    """results by relevance, highest first (top_n of them when it was set)."""
    results: List[RerankResult]
    usage: Usage
    timing: ServerTiming
    request_id: Optional[str] = None


TRUNCATE = {None: score_pb2.TRUNCATE_MODE_SERVER_DEFAULT, True: score_pb2.TRUNCATE_MODE_ON,
            False: score_pb2.TRUNCATE_MODE_OFF}
SIDES = {"right": score_pb2.TRUNCATION_SIDE_RIGHT, "left": score_pb2.TRUNCATION_SIDE_LEFT}


def rerank_request(query, documents, top_n, truncate, max_tokens_per_doc, max_sequence_tokens,
                   truncation_side, return_documents):
    if not isinstance(query, str):
        raise TypeError("query: give the query as str")
    documents = list(documents)
    for i, d in enumerate(documents):
        if not isinstance(d, str):
            raise TypeError(f"documents[{i}]: give each document as str")
    if truncate not in TRUNCATE:
        raise ValueError(f"truncate: None (the server's default), True or False, not {truncate!r}")
    if truncation_side not in SIDES:
        raise ValueError(f"truncation_side: 'right' or 'left', not {truncation_side!r}")
    truncation = None
    if max_tokens_per_doc or max_sequence_tokens or truncation_side != "right":
        truncation = score_pb2.Truncation(max_item_tokens=max_tokens_per_doc or 0,
                                          max_sequence_tokens=max_sequence_tokens or 0,
                                          side=SIDES[truncation_side])
    return score_pb2.RerankRequest(query=query, documents=documents, top_n=top_n or 0,
                                   truncate=TRUNCATE[truncate], truncation=truncation,
                                   return_documents=return_documents)


def rerank_response(response, return_documents, request_id=None):
    return RerankResponse(
        results=[RerankResult(r.index, r.relevance_score, r.log_odds,
                              r.document if return_documents else None, r.tokens_kept,
                              r.tokens_dropped) for r in response.results],
        usage=_usage(response.usage), timing=_timing(response.timing), request_id=request_id)


def to_input(value, what):
    if isinstance(value, str):
        return score_pb2.Input(text=value)
    if isinstance(value, (bytes, bytearray)):
        raise TypeError(f"{what}: give text as str, not bytes")
    try:
        ids = [int(i) for i in value]
    except TypeError:
        raise TypeError(f"{what}: expected a str or a sequence of token ids, "
                        f"got {type(value).__name__}") from None
    return score_pb2.Input(token_ids=score_pb2.TokenIds(ids=ids))


def label_fields(labels):
    """labels (all ints or all strs) as ScoreRequest/ScoreItemsHeader kwargs."""
    labels = list(labels)
    if labels and all(isinstance(x, str) for x in labels):
        return {"label_texts": labels}
    if all(isinstance(x, int) and not isinstance(x, bool) for x in labels):
        return {"label_token_ids": labels}
    raise TypeError("labels: give token ids (int) or texts (str), not a mix")


def algorithm_value(name):
    if name not in ALGORITHMS:
        raise ValueError(f"algorithm: one of {sorted(k for k in ALGORITHMS if k)}, not {name!r}")
    return ALGORITHMS[name]


def options_fields(labels, apply_softmax, item_first, return_logprobs, algorithm):
    return dict(label_fields(labels), apply_softmax=apply_softmax, item_first=item_first,
                return_logprobs=return_logprobs, algorithm=algorithm_value(algorithm))


def score_request(query, items, labels, apply_softmax, item_first, return_logprobs, algorithm):
    return score_pb2.ScoreRequest(
        query=to_input(query, "query"),
        items=[to_input(item, f"items[{i}]") for i, item in enumerate(items)],
        **options_fields(labels, apply_softmax, item_first, return_logprobs, algorithm))


def items_header(query, labels, apply_softmax, item_first, return_logprobs, algorithm):
    header = score_pb2.ScoreItemsHeader(
        query=to_input(query, "query"),
        **options_fields(labels, apply_softmax, item_first, return_logprobs, algorithm))
    return score_pb2.ScoreItemsRequest(header=header)


def items_batch(items, first_index):
    return score_pb2.ScoreItemsRequest(items=score_pb2.ItemBatch(
        items=[to_input(item, f"items[{first_index + i}]") for i, item in enumerate(items)]))


def _usage(u):
    return Usage(u.prompt_tokens, u.computed_tokens, u.cached_tokens)


def _timing(t):
    return ServerTiming(t.queue_time.ToNanoseconds() / 1e9, t.prepare_time.ToNanoseconds() / 1e9,
                        t.engine_time.ToNanoseconds() / 1e9)


def score_result(response, with_logprobs, request_id=None):
    return ScoreResult(
        scores=[list(item.scores) for item in response.items],
        logprobs=[list(item.logprobs) for item in response.items] if with_logprobs else None,
        label_token_ids=list(response.label_token_ids),
        algorithm=_ALGORITHM_NAMES.get(response.algorithm, str(response.algorithm)),
        algorithm_reason=response.algorithm_reason,
        usage=_usage(response.usage),
        timing=_timing(response.timing),
        request_id=request_id)


def chunk_items(chunk, with_logprobs):
    for index, item in zip(chunk.item_indices, chunk.items):
        yield ItemScore(index, list(item.scores), list(item.logprobs) if with_logprobs else None)


def stream_summary(summary):
    return StreamSummary(
        item_count=summary.item_count,
        label_token_ids=list(summary.label_token_ids),
        algorithm=_ALGORITHM_NAMES.get(summary.algorithm, str(summary.algorithm)),
        algorithm_reason=summary.algorithm_reason,
        usage=_usage(summary.usage),
        timing=_timing(summary.timing))


class Batcher:
    """Cuts a sequence of items into (first index, list) batches of a size."""

    def __init__(self, size):
        if size < 1:
            raise ValueError("batch_size must be at least 1")
        self.size, self.first, self.batch = size, 0, []

    def add(self, item):
        """The batch this item completes, or None."""
        self.batch.append(item)
        return self.take() if len(self.batch) == self.size else None

    def take(self):
        """The items gathered so far (None when there are none)."""
        if not self.batch:
            return None
        done = (self.first, self.batch)
        self.first += len(self.batch)
        self.batch = []
        return done


def batches(items, batch_size):
    """(first index, list) batches of an iterable."""
    batcher = Batcher(batch_size)
    for item in items:
        done = batcher.add(item)
        if done:
            yield done
    rest = batcher.take()
    if rest:
        yield rest


def auth_metadata(api_key):
    """The metadata every call carries: the API key given, else
    $LMSCORE_API_KEY; none when neither is set."""
    key = os.environ.get("LMSCORE_API_KEY") if api_key is None else api_key
    return (("authorization", f"Bearer {key}"),) if key else ()


def call_metadata(default, metadata):
    """One call's metadata: the client's (its API key, its metadata=), then
    the call's metadata= (a mapping or (key, value) pairs) when given."""
    if metadata is None:
        return default
    pairs = metadata.items() if hasattr(metadata, "items") else metadata
    return tuple(default) + tuple((key, value) for key, value in pairs)


def request_id(*metadata):
    """The first x-request-id of these metadata sequences, or None."""
    for pairs in metadata:
        for key, value in pairs or ():
            if key == "x-request-id":
                return value
    return None


def channel_options(round_robin, options):
    opts = [("grpc.max_receive_message_length", -1)]
    if round_robin:
        opts.append(("grpc.service_config",
                     '{"loadBalancingConfig": [{"round_robin": {}}]}'))
    return opts + list(options)
