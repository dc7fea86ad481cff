"""A ScoreItems stream of 10,000 items on the demo model with bounded server
memory. The client pushes every batch as fast as the transport lets it and
answers (10,000 items x 256 labels of scores and logprobs: 20 MB) come back
as chunks; the server holds one batch waiting, one being scored and one
message in flight, so its RSS has no upward trend over the stream: the peak
of the last third stays within 10% of the peak of the first third (after
warm-up).
"""
import time

from harness import Daemon, RssSampler, steady_memory_env, tokens
from lmscore.v1 import score_pb2, score_pb2_grpc

N_ITEMS = 10000
BATCH = 250
LABELS = list(range(100, 356))


def requests():
    yield score_pb2.ScoreItemsRequest(header=score_pb2.ScoreItemsHeader(
        query=tokens([9707, 11, 1879, 374, 264, 1273, 13, 220]), label_token_ids=LABELS,
        return_logprobs=True, algorithm=score_pb2.ALGORITHM_PREFILL_EXTEND))
    for start in range(0, N_ITEMS, BATCH):
        yield score_pb2.ScoreItemsRequest(items=score_pb2.ItemBatch(
            items=[tokens([1000 + i % 3000, 7, 8, 9]) for i in range(start, start + BATCH)]))


def test_10k_items_bounded_rss():
    with Daemon("--max-message-bytes", "64M", env=steady_memory_env()) as d, d.channel() as ch:
        stub = score_pb2_grpc.ScoreServiceStub(ch)
        sampler = RssSampler(d)
        seen = bytearray(N_ITEMS)
        marks = {}  # items done -> when
        summary = None
        for msg in stub.ScoreItems(requests(), timeout=1800):
            if msg.WhichOneof("kind") == "summary":
                summary = msg.summary
                continue
            for idx, it in zip(msg.chunk.item_indices, msg.chunk.items):
                assert not seen[idx] and len(it.scores) == len(it.logprobs) == len(LABELS)
                seen[idx] = 1
            done = sum(seen)
            for mark in (N_ITEMS // 10, N_ITEMS // 3, 2 * N_ITEMS // 3):
                if done >= mark and mark not in marks:
                    marks[mark] = time.monotonic()
        samples = sampler.stop()
        assert all(seen) and summary.item_count == N_ITEMS
        assert summary.usage.cached_tokens > 0  # the query was not recomputed per batch
        first = max(kb for t, kb in samples if marks[N_ITEMS // 10] <= t <= marks[N_ITEMS // 3])
        last = max(kb for t, kb in samples if t >= marks[2 * N_ITEMS // 3])
        print(f"RSS peak: first third {first} kB, last third {last} kB")
        assert last <= first * 1.10, (first, last)
        assert d.wait_idle().in_flight_calls == 0
