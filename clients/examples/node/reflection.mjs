// reflection.mjs — calling lmscored from Node without any .proto file: the
// service definitions come from the server's reflection service
// (grpc-js-reflection-client), as grpcurl and grpc_cli get them.
//   node reflection.mjs [TARGET]   (default 127.0.0.1:50051)
import grpc from "@grpc/grpc-js";
import { GrpcReflection } from "grpc-js-reflection-client";

const target = process.argv[2] ?? "127.0.0.1:50051";
const insecure = grpc.credentials.createInsecure();
const reflection = new GrpcReflection(target, insecure);

const services = await reflection.listServices();
console.log(JSON.stringify({ services }));

const descriptor = await reflection.getDescriptorBySymbol("lmscore.v1.ScoreService");
const pkg = descriptor.getPackageObject({ keepCase: true, enums: String, longs: Number,
                                          defaults: true, oneofs: true });
const client = new pkg.lmscore.v1.ScoreService(target, insecure);
const call = (method, request) => new Promise((resolve, reject) =>
    client[method](request, { deadline: Date.now() + 30_000 },
                   (err, response) => (err ? reject(err) : resolve(response))));

const info = await call("GetModelInfo", {});
console.log(JSON.stringify({ call: "GetModelInfo", model_name: info.model_name,
                             vocab_size: info.vocab_size }));
const tokens = await call("Tokenize", { text: "Hello world" });
const score = await call("Score", { query: { text: "Hello" }, items: [{ text: " world" }],
                                    label_token_ids: tokens.token_ids.slice(0, 1) });
console.log(JSON.stringify({ call: "Score", scores: score.items[0].scores }));
client.close();
