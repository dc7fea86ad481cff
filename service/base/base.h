/*
 * base/ — what every layer of the daemon stands on, and that knows no call,
 * no protocol and no engine job: the configuration (config: flags and their
 * LMSCORE_* variables), the structured log (log), the metrics registry
 * (metrics: counters and histograms, lock-free), what the process may use
 * (cpus, cgroup), small files read whole (read_file), well-formed UTF-8
 * (utf8: the one check the wire, the JSON reader and the log share), and
 * the daemon's own test hooks (test_hooks).
 *
 * Includes: nothing of the other folders. This header is what main.c uses
 * of the folder; a module includes the one header it needs.
 */
#ifndef LMSCORED_BASE_H
#define LMSCORED_BASE_H

#include "config.h"
#include "cpus.h"
#include "log.h"
#include "metrics.h"
#include "test_hooks.h"

#endif
