"""grpc.health.v1.Health: Check and Watch through the NOT_SERVING (loading) →
SERVING → NOT_SERVING (draining) transitions, and unknown services. The model
load is slowed with the test-hooks binary so that the loading phase is seen.
"""
import queue
import signal
import threading

import grpc
import pytest

from harness import Daemon, LMSCORED_TEST_HOOKS, error_info, tokens
from lmscore._pb import health_pb2, health_pb2_grpc
from lmscore.v1 import score_pb2, score_pb2_grpc

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
SERVICE_UNKNOWN = health_pb2.HealthCheckResponse.SERVICE_UNKNOWN


def watch(health, service, out):
    """Collects a Watch stream's statuses into out; None marks its end."""
    try:
        for resp in health.Watch(health_pb2.HealthCheckRequest(service=service), timeout=600):
            out.put(resp.status)
        out.put(None)
    except grpc.RpcError as e:
        out.put(e)


def test_loading_serving_draining_transitions():
    d = Daemon("--drain-timeout", "30s", binary=LMSCORED_TEST_HOOKS,
               env={"LMSCORE_TEST_LOAD_DELAY_MS": "8000"}, wait_serving=False)
    try:
        with d.channel() as ch:
            health = health_pb2_grpc.HealthStub(ch)
            statuses = {name: queue.Queue() for name in ("", "lmscore.v1.ScoreService")}
            for name, q in statuses.items():
                threading.Thread(target=watch, args=(health, name, q), daemon=True).start()
            for q in statuses.values():
                assert q.get(timeout=60) == NOT_SERVING
            assert health.Check(health_pb2.HealthCheckRequest(), timeout=30).status == NOT_SERVING

            stub = score_pb2_grpc.ScoreServiceStub(ch)
            with pytest.raises(grpc.RpcError) as e:
                stub.Score(score_pb2.ScoreRequest(query=tokens([1]), items=[tokens([2])],
                                                  label_token_ids=[3]), timeout=30)
            assert e.value.code() == grpc.StatusCode.UNAVAILABLE
            assert error_info(e.value).reason == "not_ready"

            for q in statuses.values():
                assert q.get(timeout=120) == SERVING
            assert health.Check(health_pb2.HealthCheckRequest(
                service="lmscore.v1.ScoreService"), timeout=30).status == SERVING

            d.proc.send_signal(signal.SIGTERM)
            for q in statuses.values():
                assert q.get(timeout=60) == NOT_SERVING
                assert q.get(timeout=60) is None  # the drain ends the stream with OK
    finally:
        d.stop_clean()
    assert d.returncode == 0


def test_unknown_service():
    with Daemon() as d, d.channel() as ch:
        health = health_pb2_grpc.HealthStub(ch)
        with pytest.raises(grpc.RpcError) as e:
            health.Check(health_pb2.HealthCheckRequest(service="no.such.Service"), timeout=30)
        assert e.value.code() == grpc.StatusCode.NOT_FOUND
        q = queue.Queue()
        threading.Thread(target=watch, args=(health, "no.such.Service", q), daemon=True).start()
        assert q.get(timeout=60) == SERVICE_UNKNOWN
        assert health.Check(health_pb2.HealthCheckRequest(), timeout=30).status == SERVING
