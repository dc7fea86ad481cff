#!/bin/sh
# prometheusrule.sh [RULES_FILE] — prints k8s/monitoring/prometheusrule.yaml:
# the Prometheus Operator's PrometheusRule holding the groups of the plain
# rules file (default packaging/prometheus/lmscore.rules.yml) as they are,
# comments included. After editing the rules:
#   sh scripts/prometheusrule.sh > k8s/monitoring/prometheusrule.yaml
# (packaging.alerts fails while the two differ).
set -eu
HERE=$(cd "$(dirname "$0")/.." && pwd)
RULES=${1:-$HERE/packaging/prometheus/lmscore.rules.yml}

cat <<'HEAD'
# prometheusrule.yaml — lmscored's alerting and recording rules for the
# Prometheus Operator: the groups of packaging/prometheus/lmscore.rules.yml,
# made by scripts/prometheusrule.sh (edit the rules file, then rerun it).
# Needs the operator's CRDs (monitoring.coreos.com/v1); the labels the
# operator's Prometheus selects rules by come from kustomization.yaml here.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: lmscored
  labels:
    app.kubernetes.io/name: lmscored
    app.kubernetes.io/part-of: lmscore
spec:
HEAD
# the file's own header comment stays behind; from `groups:` on, indented
sed -n '/^groups:/,$p' "$RULES" | sed 's/^\(.\)/  \1/'
