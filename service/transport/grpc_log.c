/*
 * grpc_log.c — gRPC core's messages as log records (see grpc_log.h).
 */
#include "grpc_log.h"

#include <grpc/support/log.h>

#include "log.h"

static void on_grpc_log(gpr_log_func_args *args)
{
    static const int priority[] = {[GPR_LOG_SEVERITY_DEBUG] = LOG_DEBUG,
                                   [GPR_LOG_SEVERITY_INFO] = LOG_INFO,
                                   [GPR_LOG_SEVERITY_ERROR] = LOG_ERR};
    unsigned severity = (unsigned)args->severity;
    log_record r;
    log_begin(&r, severity <= GPR_LOG_SEVERITY_ERROR ? priority[severity] : LOG_ERR, "gRPC");
    log_str(&r, "text", args->message ? args->message : "");
    if (args->file) {
        log_str(&r, "file", args->file);
        log_int(&r, "line", args->line);
    }
    log_end(&r);
}

void grpc_log_route(void)
{
    gpr_set_log_function(on_grpc_log);
}
