"""Server reflection (grpc.reflection.v1 and v1alpha): the raw protocol from
Python, then a real reflection client (npm grpc-js-reflection-client over
@grpc/grpc-js) that lists the services, fetches the descriptors and calls Score
and Health.Check from the fetched descriptors only.
"""
import json
import os
import subprocess

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool

from grpc_reflection.v1 import reflection_pb2 as v1, reflection_pb2_grpc as v1_grpc
from grpc_reflection.v1alpha import reflection_pb2 as v1a, reflection_pb2_grpc as v1a_grpc
from harness import Daemon, tokens
from lmscore.v1 import score_pb2, score_pb2_grpc

SERVICES = {"lmscore.v1.ScoreService", "grpc.health.v1.Health",
            "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"}
NODE_DIR = os.environ.get("LMSCORE_NODE_CLIENTS_DIR")
CLIENT_JS = os.path.join(os.path.dirname(__file__), "node-clients", "client.js")


@pytest.fixture(scope="module")
def daemon():
    with Daemon() as d:
        yield d


@pytest.fixture(scope="module", params=["v1", "v1alpha"])
def reflect(daemon, request):
    """Sends reflection requests on one stream and returns the responses."""
    mod, stub_mod = (v1, v1_grpc) if request.param == "v1" else (v1a, v1a_grpc)
    with daemon.channel() as ch:
        stub = stub_mod.ServerReflectionStub(ch)

        def ask(**kw):
            reqs = [mod.ServerReflectionRequest(host="", **{k: v}) for k, v in kw.items()]
            return list(stub.ServerReflectionInfo(iter(reqs), timeout=60))
        yield ask


def files_of(resp):
    return [descriptor_pb2.FileDescriptorProto.FromString(b)
            for b in resp.file_descriptor_response.file_descriptor_proto]


def test_list_services(reflect):
    (resp,) = reflect(list_services="")
    assert {s.name for s in resp.list_services_response.service} == SERVICES
    assert resp.original_request.list_services == ""


def without_json_names(fd):
    """protoc's descriptor sets carry json_name; Python's embedded copy does not."""
    def strip(messages):
        for m in messages:
            for f in m.field:
                f.ClearField("json_name")
            strip(m.nested_type)
    strip(fd.message_type)
    return fd


def test_file_by_filename_equals_protoc(reflect):
    (resp,) = reflect(file_by_filename="lmscore/v1/score.proto")
    fds = files_of(resp)
    # the file first, then what it imports
    assert [f.name for f in fds] == ["lmscore/v1/score.proto", "google/protobuf/duration.proto"]
    fd = fds[0]
    assert without_json_names(fd) == descriptor_pb2.FileDescriptorProto.FromString(
        score_pb2.DESCRIPTOR.serialized_pb)
    assert [m.name for m in fd.service[0].method] == ["Score", "ScoreStream", "ScoreItems",
                                                       "Rerank", "Tokenize", "GetModelInfo"]


@pytest.mark.parametrize("symbol,file", [
    ("lmscore.v1.ScoreService", "lmscore/v1/score.proto"),
    ("lmscore.v1.ScoreService.ScoreItems", "lmscore/v1/score.proto"),
    ("lmscore.v1.ScoreRequest", "lmscore/v1/score.proto"),
    ("lmscore.v1.ScoreRequest.label_texts", "lmscore/v1/score.proto"),
    ("lmscore.v1.Algorithm", "lmscore/v1/score.proto"),
    ("lmscore.v1.ALGORITHM_PREFILL_EXTEND", "lmscore/v1/score.proto"),
    ("grpc.health.v1.Health", "grpc/health/v1/health.proto"),
    ("grpc.health.v1.HealthCheckResponse.ServingStatus", "grpc/health/v1/health.proto"),
    ("grpc.reflection.v1alpha.ServerReflection", "grpc/reflection/v1alpha/reflection.proto"),
    ("google.rpc.ErrorInfo", "google/rpc/error_details.proto"),
])
def test_file_containing_symbol(reflect, symbol, file):
    (resp,) = reflect(file_containing_symbol=symbol)
    fds = files_of(resp)
    assert fds[0].name == file
    # dependencies come along, so the answer alone builds a pool
    pool = descriptor_pool.DescriptorPool()
    for fd in reversed(fds):
        pool.Add(fd)
    pool.FindFileByName(file)


def test_status_proto_comes_with_any(reflect):
    (resp,) = reflect(file_containing_symbol="google.rpc.Status")
    assert [fd.name for fd in files_of(resp)] == ["google/rpc/status.proto",
                                                  "google/protobuf/any.proto"]


def test_not_found_and_extensions(reflect):
    for kw in ({"file_containing_symbol": "lmscore.v1.Nope"},
               {"file_by_filename": "nope.proto"},
               {"all_extension_numbers_of_type": "lmscore.v1.Nope"}):
        (resp,) = reflect(**kw)
        assert resp.error_response.error_code == 5  # NOT_FOUND
    (resp,) = reflect(all_extension_numbers_of_type="lmscore.v1.ScoreRequest")
    assert resp.all_extension_numbers_response.base_type_name == "lmscore.v1.ScoreRequest"
    assert list(resp.all_extension_numbers_response.extension_number) == []


def test_many_requests_on_one_stream(daemon):
    with daemon.channel() as ch:
        stub = v1_grpc.ServerReflectionStub(ch)
        reqs = [v1.ServerReflectionRequest(list_services="") for _ in range(50)]
        reqs += [v1.ServerReflectionRequest(file_containing_symbol="lmscore.v1.Usage")] * 50
        resps = list(stub.ServerReflectionInfo(iter(reqs), timeout=120))
        assert len(resps) == 100
        assert all(r.original_request == q for r, q in zip(resps, reqs))


@pytest.mark.parametrize("version", ["v1alpha", "v1"])
def test_real_reflection_client_calls_score(daemon, version):
    assert NODE_DIR and os.path.isdir(os.path.join(NODE_DIR, "node_modules")), \
        "service.npm did not install the reflection client"
    req = {"query": {"token_ids": {"ids": [1, 2, 3]}},
           "items": [{"token_ids": {"ids": [4, 5]}}, {"token_ids": {"ids": [6]}}],
           "label_token_ids": [7, 8], "return_logprobs": True}
    env = dict(os.environ, NODE_PATH=os.path.join(NODE_DIR, "node_modules"))
    out = subprocess.run(["node", CLIENT_JS, daemon.target, version, json.dumps(req)],
                         capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert set(got["services"]) == SERVICES
    assert got["methods"] == ["Score", "ScoreStream", "ScoreItems", "Rerank", "Tokenize",
                              "GetModelInfo"]
    assert got["health"]["status"] == "SERVING"
    assert got["missing"]

    with daemon.channel() as ch:
        want = score_pb2_grpc.ScoreServiceStub(ch).Score(score_pb2.ScoreRequest(
            query=tokens([1, 2, 3]), items=[tokens([4, 5]), tokens([6])], label_token_ids=[7, 8],
            return_logprobs=True), timeout=120)
    resp = got["response"]
    assert resp["label_token_ids"] == [7, 8]
    assert resp["algorithm"] == score_pb2.Algorithm.Name(want.algorithm)
    for g, w in zip(resp["items"], want.items):
        assert g["scores"] == pytest.approx(list(w.scores), rel=1e-6)
        assert g["logprobs"] == pytest.approx(list(w.logprobs), rel=1e-6)
