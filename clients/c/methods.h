/*
 * methods.h — the full gRPC method names the CLI calls.
 */
#ifndef LMSCORE_CLI_METHODS_H
#define LMSCORE_CLI_METHODS_H

#define METHOD_SCORE          "/lmscore.v1.ScoreService/Score"
#define METHOD_SCORE_ITEMS    "/lmscore.v1.ScoreService/ScoreItems"
#define METHOD_RERANK         "/lmscore.v1.ScoreService/Rerank"
#define METHOD_TOKENIZE       "/lmscore.v1.ScoreService/Tokenize"
#define METHOD_GET_MODEL_INFO "/lmscore.v1.ScoreService/GetModelInfo"
#define METHOD_HEALTH_CHECK   "/grpc.health.v1.Health/Check"

#endif
