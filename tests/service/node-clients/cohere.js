// cohere.js — drives lmscored's HTTP API with Cohere's own SDK (cohere-ai)
// and prints what it answered as JSON for test_http_clients.py:
//   node cohere.js BASE_URL API_KEY MODEL
// CohereClientV2.rerank posts to BASE_URL/v2/rerank, CohereClient.rerank
// (v1) to BASE_URL/v1/rerank; a model the server does not serve must end
// in the SDK's NotFoundError. No retries: every answer is the first one.
'use strict';
const { CohereClient, CohereClientV2, CohereError } = require('cohere-ai');

const [baseUrl, token, model] = process.argv.slice(2);
const query = 'What is the capital of France?';
const documents = ['Paris is the capital of France.', 'Berlin is the capital of Germany.',
  'Bananas are yellow.'];
const options = { maxRetries: 0, timeoutInSeconds: 120 };

async function main() {
  const v2 = new CohereClientV2({ token, baseUrl });
  const v1 = new CohereClient({ token, baseUrl });
  const out = {};
  out.v2 = await v2.rerank({ model, query, documents, topN: 2, maxTokensPerDoc: 512 }, options);
  out.v1 = await v1.rerank({ model, query, documents, topN: 2, returnDocuments: true }, options);
  try {
    await v2.rerank({ model: `${model}-not-served`, query, documents }, options);
    out.unknown = 'no error';
  } catch (e) {
    out.unknown = { error: e.constructor.name, statusCode: e.statusCode, body: e.body,
      isCohereError: e instanceof CohereError };
  }
  process.stdout.write(JSON.stringify(out));
}

main().catch((e) => {
  process.stderr.write(`${e.stack || e}\n${JSON.stringify(e.body || null)}\n`);
  process.exit(1);
});
