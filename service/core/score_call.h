/*
 * score_call.h — a scoring call, whichever door it came in by: gRPC's Score
 * and ScoreStream (rpc_score.c), HTTP's /v1/score and /v1/rerank
 * (http_score.c, http_rerank.c), and ScoreItems' item batches. The door
 * admits the call (service_admit) and decodes its request into a
 * lmscore.v1 ScoreRequest; from there on every door shares one path: the
 * request is checked, tokenized and scored on the worker pool, and the call
 * ends with a ScoreResponse (or a stream's chunks and summary), which the
 * door encodes.
 */
#ifndef LMSCORED_SCORE_CALL_H
#define LMSCORED_SCORE_CALL_H

#include "call.h"
#include "lmscore.h"
#include "lmscore/v1/score.pb-c.h"
#include "score_encode.h"
#include "score_request.h"
#include "service.h"

/* Queues the scoring of req (taken over) for call c, admitted by
 * service_admit (engine is what it returned). gate NULL: the call ends
 * with one ScoreResponse; otherwise (a streaming call's gate, opened by the
 * call's on_sent and on_close) it streams ScoreStreamResponse chunks and
 * ends with their summary. A full queue ends the call (RESOURCE_EXHAUSTED). */
void score_call_submit(service *svc, call *c, lms_engine *engine, Lmscore__V1__ScoreRequest *req,
                       service_gate *gate);

/* A unary call whose answer is made from the ScoreResponse (gRPC's
 * Rerank): reply gets it on the worker (valid during the call) and ends
 * the job's call, with service_job_reply or service_job_finish. */
typedef void (*score_reply_fn)(service_job *job, const Lmscore__V1__ScoreResponse *resp);
/* name_fields (optional) says a failure in the call's own terms, when its
 * request became a ScoreRequest of other names. */
void score_call_submit_unary(service *svc, call *c, lms_engine *engine,
                             Lmscore__V1__ScoreRequest *req, score_reply_fn reply,
                             void (*name_fields)(rpc_status *st));

/* ---- a stream scored piece by piece (ScoreItems' batches) ---------------- */

/* What a stream's chunks scored, for its summary. */
typedef struct {
    Lmscore__V1__Usage usage;
    score_timing timing;
    lms_algorithm algorithm; /* the last chunk's */
    char algorithm_reason[200];
    int64_t items_scored;
} score_totals;

void score_totals_init(score_totals *t);

/* Prefills req's query into a session for c's stream (stopping when the
 * call should stop: LMS_ERR_CANCELLED). */
lms_status score_call_session_begin(lms_engine *engine, call *c, const lms_score_request *req,
                                    lms_score_session **out, lms_error *err);

/* Scores the chunk of items that starts at *next (through session when
 * given), queues its results to c and moves *next past it; t adds what it
 * scored. index_base is the stream index of items[0]. On failure st holds
 * the status to end the call with. */
bool score_call_chunk(lms_engine *engine, lms_score_session *session, call *c,
                      const score_header *h, const score_items *items, int32_t *next,
                      int64_t index_base, score_totals *t, rpc_status *st);

/* A stream's closing message, sent with OK after every chunk: from job
 * when given (service_job_reply), else straight to c. */
void score_call_summary(call *c, service_job *job, const score_header *h, score_totals *t);

#endif
