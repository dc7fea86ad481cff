/*
 * rerank_order.c — ranking a rerank's ScoreResponse (see rerank_order.h).
 */
#include "rerank_order.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int by_relevance(const void *a, const void *b)
{
    const rerank_ranked *x = a, *y = b;
    if (x->relevance != y->relevance) return x->relevance > y->relevance ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

rerank_ranked *rerank_order(const Lmscore__V1__ScoreResponse *resp)
{
    size_t n = resp->n_items;
    rerank_ranked *order = malloc((n ? n : 1) * sizeof *order);
    if (!order) return NULL;
    for (size_t i = 0; i < n; i++)
        order[i] = (rerank_ranked){.relevance = resp->items[i]->scores[0], .index = i};
    qsort(order, n, sizeof *order, by_relevance);
    return order;
}

/* Against the other labels when there are several, else against every
 * other token. */
float rerank_log_odds(const Lmscore__V1__ItemScores *it)
{
    double first = it->logprobs[0], rest;
    if (it->n_logprobs > 1) {
        double top = it->logprobs[1], sum = 0;
        for (size_t k = 2; k < it->n_logprobs; k++)
            if (it->logprobs[k] > top) top = it->logprobs[k];
        for (size_t k = 1; k < it->n_logprobs; k++)
            sum += exp(it->logprobs[k] - top);
        rest = top + log(sum);
    } else {
        rest = log(-expm1(first));
    }
    return (float)(first - rest);
}

/* dst = src with every "items" made documents (cut to size). */
static void rename_items(char *dst, size_t size, const char *src, const char *documents)
{
    size_t n = 0;
    while (*src && n + 1 < size) {
        if (strncmp(src, "items", 5) == 0) {
            n += (size_t)snprintf(dst + n, size - n, "%s", documents);
            if (n >= size) n = size - 1;
            src += 5;
        } else {
            dst[n++] = *src++;
        }
    }
    dst[n] = '\0';
}

void rerank_name_items(rpc_status *st, const char *documents)
{
    char field[sizeof st->field], message[sizeof st->message];
    rename_items(field, sizeof field, st->field, documents);
    rename_items(message, sizeof message, st->message, documents);
    memcpy(st->field, field, sizeof field);
    memcpy(st->message, message, sizeof message);
}

size_t rerank_shown(int64_t top_n, size_t n)
{
    return top_n > 0 && (size_t)top_n < n ? (size_t)top_n : n;
}
