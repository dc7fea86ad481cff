/*
 * raw_floor.h — the cheapest service this machine can run, as the floor
 * under the gRPC numbers of bench_service: a child process with its own
 * engine answering on one blocking loopback TCP connection. A call sends the
 * request's bytes behind a length; the child scores the request (the one it
 * inherited, which those bytes encode), packs a ScoreResponse and sends it
 * back behind its own engine time and a length. No HTTP/2, no completion
 * queue, no hand-off between threads: what remains of a call beyond the
 * engine is two processes, the kernel's loopback and two wake-ups.
 */
#ifndef LMSCORE_BENCH_RAW_FLOOR_H
#define LMSCORE_BENCH_RAW_FLOOR_H

#include <stddef.h>
#include <stdint.h>

#include "lmscore.h"

typedef struct raw_floor raw_floor;

/* Forks the server (before the caller starts gRPC or its own engine: a
 * forked child inherits no threads) and connects to it. 0, or -1 with a
 * message on stderr. */
int raw_floor_start(const char *model, const lms_score_request *req, raw_floor **out);

/* One call; *engine_ms is the server's own time in lms_engine_score.
 * 0, or -1 with a message on stderr. */
int raw_floor_call(raw_floor *f, const uint8_t *payload, size_t len, double *engine_ms);

/* Closes the connection and waits for the server to exit. */
void raw_floor_stop(raw_floor *f);

#endif
