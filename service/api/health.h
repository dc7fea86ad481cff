/*
 * health.h — grpc.health.v1.Health: Check and Watch. The daemon reports
 * NOT_SERVING until the model is loaded and warmed, SERVING then, and
 * NOT_SERVING again once it drains; Watch streams every change. Known
 * services: "" (the whole server) and "lmscore.v1.ScoreService".
 */
#ifndef LMSCORED_HEALTH_H
#define LMSCORED_HEALTH_H

#include <stdbool.h>

#include "call.h"

typedef struct health health;

health *health_create(void);
void health_free(health *h);
const call_handler *health_check_handler(health *h);
const call_handler *health_watch_handler(health *h);

/* Changes the status of every known service and notifies the watchers. */
void health_set_serving(health *h, bool serving);
/* Ends every Watch stream with OK (after its last status went out), so a
 * draining server can shut down. */
void health_end_watches(health *h);

#endif
