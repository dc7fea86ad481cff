/*
 * rpc_info.h — lmscore.v1.ScoreService's Tokenize and GetModelInfo.
 */
#ifndef LMSCORED_RPC_INFO_H
#define LMSCORED_RPC_INFO_H

#include "call.h"
#include "service.h"

typedef struct {
    call_handler tokenize;
    call_handler get_model_info;
} rpc_info_handlers;

void rpc_info_init(rpc_info_handlers *h, service *svc);

#endif
