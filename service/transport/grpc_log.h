/*
 * grpc_log.h — gRPC core's own messages (gpr_log) into the daemon's log:
 * one record per message, in the daemon's format (so one JSON line under
 * --log-format json), instead of gRPC's own "E1127 ..." text on stderr.
 */
#ifndef LMSCORED_GRPC_LOG_H
#define LMSCORED_GRPC_LOG_H

/* Installs the route (gpr_set_log_function); gRPC's verbosity
 * (GRPC_VERBOSITY, default ERROR) still picks which messages come. */
void grpc_log_route(void);

#endif
