// client.js — drives lmscored's server reflection with a real client
// (grpc-js-reflection-client over @grpc/grpc-js) and prints what it found
// as JSON for test_reflection.py:
//   node client.js HOST:PORT VERSION REQUEST_JSON
// VERSION is v1 or v1alpha. The client lists the services and the methods of
// lmscore.v1.ScoreService, fetches the descriptors by symbol and by file
// name, then calls Score and Health.Check through stubs built only from the
// fetched descriptors (no .proto file anywhere).
'use strict';
const grpc = require('@grpc/grpc-js');
const { GrpcReflection } = require('grpc-js-reflection-client');

const [target, version, requestJson] = process.argv.slice(2);
const loaderOptions = { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true };

function unary(client, method, request) {
  return new Promise((resolve, reject) => {
    client[method](request, { deadline: Date.now() + 120000 }, (err, resp) =>
      (err ? reject(err) : resolve(resp)));
  });
}

async function main() {
  const creds = grpc.credentials.createInsecure();
  const reflection = new GrpcReflection(target, creds, {}, version);
  const services = await reflection.listServices();
  const methods = (await reflection.listMethods('lmscore.v1.ScoreService')).map((m) => m.name);

  const scoreDescriptor = await reflection.getDescriptorBySymbol('lmscore.v1.ScoreService');
  const scorePkg = scoreDescriptor.getPackageObject(loaderOptions);
  const scoreClient = new scorePkg.lmscore.v1.ScoreService(target, creds);
  const response = await unary(scoreClient, 'Score', JSON.parse(requestJson));

  const healthDescriptor = await reflection.getDescriptorByFileName('grpc/health/v1/health.proto');
  const healthPkg = healthDescriptor.getPackageObject(loaderOptions);
  const healthClient = new healthPkg.grpc.health.v1.Health(target, creds);
  const health = await unary(healthClient, 'Check', { service: 'lmscore.v1.ScoreService' });

  let missing = null;
  try {
    await reflection.getDescriptorBySymbol('lmscore.v1.NoSuchThing');
  } catch (e) {
    missing = String(e && e.message ? e.message : e);
  }
  scoreClient.close();
  healthClient.close();
  process.stdout.write(JSON.stringify({ services, methods, response, health, missing }) + '\n');
}

main().then(() => process.exit(0), (e) => {
  process.stderr.write(`reflection client failed: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
