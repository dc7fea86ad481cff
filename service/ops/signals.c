/*
 * signals.c — the signals lmscored takes over (see signals.h).
 */
#include "signals.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* The signals whose default action ends the process and that are not a
 * fault of the process itself. */
static const struct {
    int sig;
    const char *name;
    signal_action action;
} taken[] = {
    {SIGTERM, "SIGTERM", SIGNAL_STOP},   {SIGINT, "SIGINT", SIGNAL_STOP},
    {SIGQUIT, "SIGQUIT", SIGNAL_STOP},   {SIGUSR1, "SIGUSR1", SIGNAL_LOG_STATE},
    {SIGHUP, "SIGHUP", SIGNAL_IGNORE},   {SIGUSR2, "SIGUSR2", SIGNAL_IGNORE},
    {SIGALRM, "SIGALRM", SIGNAL_IGNORE}, {SIGVTALRM, "SIGVTALRM", SIGNAL_IGNORE},
    {SIGPROF, "SIGPROF", SIGNAL_IGNORE}, {SIGXCPU, "SIGXCPU", SIGNAL_IGNORE},
    {SIGXFSZ, "SIGXFSZ", SIGNAL_IGNORE}, {SIGIO, "SIGIO", SIGNAL_IGNORE},
    {SIGPWR, "SIGPWR", SIGNAL_IGNORE},   {SIGSTKFLT, "SIGSTKFLT", SIGNAL_IGNORE},
};
#define N_TAKEN (sizeof taken / sizeof taken[0])

static void taken_set(sigset_t *set)
{
    sigemptyset(set);
    for (size_t i = 0; i < N_TAKEN; i++)
        sigaddset(set, taken[i].sig);
    for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
        sigaddset(set, sig);
}

void signals_block(void)
{
    sigset_t set;
    taken_set(&set);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
}

int signals_wait(int64_t timeout_ms)
{
    sigset_t set;
    taken_set(&set);
    struct timespec timeout = {timeout_ms / 1000, (timeout_ms % 1000) * 1000000};
    int sig = sigtimedwait(&set, NULL, &timeout);
    return sig > 0 ? sig : 0;
}

signal_action signals_action(int sig)
{
    for (size_t i = 0; i < N_TAKEN; i++)
        if (taken[i].sig == sig) return taken[i].action;
    return SIGNAL_IGNORE;
}

const char *signals_name(int sig, char *buf, size_t size)
{
    for (size_t i = 0; i < N_TAKEN; i++)
        if (taken[i].sig == sig) return taken[i].name;
    if (sig >= SIGRTMIN && sig <= SIGRTMAX)
        snprintf(buf, size, "SIGRTMIN+%d", sig - SIGRTMIN);
    else
        snprintf(buf, size, "signal %d", sig);
    return buf;
}
