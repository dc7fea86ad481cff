/*
 * daemon.h — what main.c shares with the files of its steps: load.c (the
 * model load, on a thread of its own while the main thread takes signals)
 * and drain.c (serving until a stop signal, then the drain). They are
 * compiled per binary, as main.c is: the test-hooks binary's load and
 * drain carry its fault injection.
 */
#ifndef LMSCORED_DAEMON_H
#define LMSCORED_DAEMON_H

#include <stdint.h>

#include "api.h"
#include "base.h"
#include "core.h"
#include "ops.h"
#include "transport.h"

/* How long after --drain-timeout the process is gone at the latest: the
 * server's own shutdown (a second for the calls' last sends) and the
 * workers noticing their calls ended. */
#define STOP_GRACE_MS 2000

void daemon_sleep_ms(int64_t ms);
void daemon_log_error(const char *what, const lms_error *err);
/* Exits at once, leaving behind work that did not stop by its deadline. */
_Noreturn void daemon_exit_leaving(const char *what);

/* load.c */

/* Each worker's share of the thread budget, logged. */
int daemon_worker_threads(const lmscored_config *cfg);
/* Loads the model while the main thread takes signals. A stop signal makes
 * the load stop at its next poll (LMS_ERR_CANCELLED); a load still running
 * --drain-timeout + STOP_GRACE_MS after it is left behind. */
lms_status daemon_load_taking_signals(const service *svc, lms_engine **engine, lms_error *err);

/* drain.c */

/* Acts on a signal taken by the main thread that is not a stop signal. */
void daemon_on_signal(int sig, const service *svc);
/* Serves until a stop signal, which it returns, acting on the others and
 * ticking systemd meanwhile. */
int daemon_serve_until_signal(const service *svc, systemd_notifier *sd);
/* Ends the calls still running when the server stops: UNAVAILABLE, so a
 * client retries them elsewhere. */
void daemon_stop_server(server *srv, http_api *http);
/* The drain after the stop signal sig; returns its deadline. */
int64_t daemon_drain(service *svc, int sig, health *h, server *srv, http_api *http,
                     systemd_notifier *sd);

#endif
