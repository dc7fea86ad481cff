// validate_k8s.mjs — validates rendered Kubernetes manifests against the API's
// JSON schemas (the npm package kubernetes-models, generated from the
// Kubernetes OpenAPI spec; the Prometheus Operator's CRDs from
// @kubernetes-models/prometheus-operator). Usage: node validate_k8s.mjs RENDERED.yaml
// Prints one line per object; exits 1 if any object is invalid or unknown.
import { readFileSync } from "node:fs";
import yaml from "js-yaml";

const docs = yaml.loadAll(readFileSync(process.argv[2], "utf8")).filter((d) => d);
let failures = 0;
for (const doc of docs) {
    const name = `${doc.kind}/${doc.metadata?.name}`;
    let model;
    try {
        // "v1" is the core group; "apps/v1" → kubernetes-models/apps/v1/Deployment
        const pkg = doc.apiVersion.startsWith("monitoring.coreos.com/")
            ? "@kubernetes-models/prometheus-operator"
            : "kubernetes-models";
        model = await import(`${pkg}/${doc.apiVersion}/${doc.kind}`);
    } catch (e) {
        console.log(`FAIL ${name}: no schema for ${doc.apiVersion} ${doc.kind}`);
        failures++;
        continue;
    }
    try {
        new model[doc.kind](doc).validate();
        console.log(`ok   ${name} (${doc.apiVersion})`);
    } catch (e) {
        console.log(`FAIL ${name}: ${e.message}`);
        failures++;
    }
}
if (docs.length === 0) {
    console.log("FAIL no objects in input");
    failures++;
}
process.exit(failures ? 1 : 0);
