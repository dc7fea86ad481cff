// score.mjs — calling lmscored from Node with @grpc/grpc-js and the .proto:
// a unary Score, a bidirectional ScoreItems stream, and an error whose
// google.rpc.ErrorInfo reason is read from the grpc-status-details-bin trailer.
//   node score.mjs [TARGET]        (default 127.0.0.1:50051)
// Prints one JSON line per result, for people and for tests/clients/test_examples.py.
import path from "node:path";
import { fileURLToPath } from "node:url";
import grpc from "@grpc/grpc-js";
import protoLoader from "@grpc/proto-loader";
import protobuf from "protobufjs";

const target = process.argv[2] ?? "127.0.0.1:50051";
const protos = process.env.LMSCORE_PROTOS ??
    path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../protos");
const options = { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true,
                  includeDirs: [protos] };
const { lmscore } = grpc.loadPackageDefinition(
    protoLoader.loadSync("lmscore/v1/score.proto", options));
const client = new lmscore.v1.ScoreService(target, grpc.credentials.createInsecure());
const deadline = () => ({ deadline: Date.now() + 30_000 });

// The ErrorInfo of a failed call: grpc-status-details-bin holds a google.rpc.Status.
const rpcTypes = new protobuf.Root().loadSync(["google/rpc/status.proto", "google/rpc/error_details.proto"]
    .map((p) => path.join(protos, p)), { keepCase: true });
function errorInfo(err) {
    const [bin] = err.metadata?.get("grpc-status-details-bin") ?? [];
    if (!bin) return null;
    const status = rpcTypes.lookupType("google.rpc.Status").decode(bin);
    const any = status.details.find((d) => d.type_url.endsWith("/google.rpc.ErrorInfo"));
    return any ? rpcTypes.lookupType("google.rpc.ErrorInfo").decode(any.value) : null;
}

const unary = (method, request) => new Promise((resolve, reject) =>
    client[method](request, deadline(), (err, response) => (err ? reject(err) : resolve(response))));

// 1. Score: two text items, labels as token ids, softmax over the labels.
const score = await unary("Score", {
    query: { text: "Is the sky blue?" },
    items: [{ text: " Yes." }, { text: " No." }],
    label_token_ids: [3869, 1939],
    apply_softmax: true,
});
console.log(JSON.stringify({ call: "Score", scores: score.items.map((i) => i.scores),
                             algorithm: score.algorithm }));

// 2. ScoreItems: a header, then item batches; scores stream back as they finish.
const streamed = await new Promise((resolve, reject) => {
    const call = client.ScoreItems(deadline());
    const results = [];
    let summary = null;
    call.on("data", (msg) => {
        if (msg.chunk) msg.chunk.item_indices.forEach((index, k) =>
            results.push({ index, scores: msg.chunk.items[k].scores }));
        else summary = msg.summary;
    });
    call.on("error", reject);
    call.on("end", () => resolve({ results, summary }));
    call.write({ header: { query: { token_ids: { ids: [1, 450, 3303] } },
                           label_token_ids: [3869] } });
    for (let b = 0; b < 4; b++)
        call.write({ items: { items: Array.from({ length: 25 },
                                                (_, i) => ({ token_ids: { ids: [3 + b, 4 + i] } })) } });
    call.end();
});
console.log(JSON.stringify({ call: "ScoreItems", count: streamed.results.length,
                             item_count: streamed.summary.item_count }));

// 3. An invalid request: INVALID_ARGUMENT with a machine-readable reason.
try {
    await unary("Score", { query: { token_ids: { ids: [1] } },
                           items: [{ token_ids: { ids: [99999999] } }], label_token_ids: [5] });
} catch (err) {
    const info = errorInfo(err);
    console.log(JSON.stringify({ call: "Score", code: grpc.status[err.code], message: err.details,
                                 reason: info?.reason, field: info?.metadata?.field }));
}
client.close();
