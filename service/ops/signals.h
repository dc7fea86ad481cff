/*
 * signals.h — the signals lmscored takes over, and what each one does.
 *
 * Every signal whose default action ends the process is taken over, except
 * the synchronous faults (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP,
 * SIGSYS: a crash stays a crash) and SIGKILL/SIGSTOP, which cannot be. They
 * are blocked in every thread (signals_block, before the first thread
 * starts) and taken by the main thread (signals_wait), so none can end the
 * process without the drain:
 *
 *   SIGTERM, SIGINT, SIGQUIT  stop: the drain, then exit
 *   SIGUSR1                   log the daemon's state (one record)
 *   SIGPIPE                   ignored silently: a peer that went away
 *   every other one           ignored, with a log record naming it (SIGHUP:
 *                             the configuration is read only at start)
 */
#ifndef LMSCORED_SIGNALS_H
#define LMSCORED_SIGNALS_H

#include <stddef.h>
#include <stdint.h>

typedef enum { SIGNAL_STOP, SIGNAL_LOG_STATE, SIGNAL_IGNORE } signal_action;

/* Blocks the taken-over signals in the calling thread (and so in every
 * thread it starts) and ignores SIGPIPE. */
void signals_block(void);
/* Waits up to timeout_ms for a taken-over signal; returns it, or 0. */
int signals_wait(int64_t timeout_ms);
signal_action signals_action(int sig);
/* "SIGHUP", ..., "SIGRTMIN+3" (static storage, or buf). */
const char *signals_name(int sig, char *buf, size_t size);

#endif
