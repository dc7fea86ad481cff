/*
 * inputs.c — building lmscore.v1.Input messages on the heap, the way
 * protobuf_c_message_free_unpacked can free them.
 */
#include "inputs.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"

bool parse_token_ids(const char *text, const char *what, int32_t **ids, size_t *n)
{
    int32_t *out = NULL;
    size_t count = 0, cap = 0;
    const char *p = text;
    for (;;) {
        while (*p == ',' || isspace((unsigned char)*p))
            p++;
        if (!*p) break;
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < INT32_MIN || v > INT32_MAX ||
            (*end && *end != ',' && !isspace((unsigned char)*end))) {
            fprintf(stderr, "lmscore: %s: \"%s\" is not a list of token ids (e.g. 1,2,3)\n", what,
                    text);
            free(out);
            return false;
        }
        int32_t id = (int32_t)v;
        if (!array_push((void **)&out, &count, &cap, sizeof id, &id)) {
            fprintf(stderr, "lmscore: out of memory\n");
            free(out);
            return false;
        }
        p = end;
    }
    *ids = out;
    *n = count;
    return true;
}

Lmscore__V1__Input *input_from_text(const char *text)
{
    Lmscore__V1__Input *input = malloc(sizeof *input);
    char *copy = strdup(text);
    if (!input || !copy) {
        free(input);
        free(copy);
        return NULL;
    }
    lmscore__v1__input__init(input);
    input->kind_case = LMSCORE__V1__INPUT__KIND_TEXT;
    input->text = copy;
    return input;
}

/* Wraps ids (taken over, even on failure) in a new Input. */
static Lmscore__V1__Input *input_taking_ids(int32_t *ids, size_t n)
{
    Lmscore__V1__Input *input = malloc(sizeof *input);
    Lmscore__V1__TokenIds *token_ids = malloc(sizeof *token_ids);
    if (!input || !token_ids) {
        free(input);
        free(token_ids);
        free(ids);
        return NULL;
    }
    lmscore__v1__token_ids__init(token_ids);
    token_ids->ids = ids;
    token_ids->n_ids = n;
    lmscore__v1__input__init(input);
    input->kind_case = LMSCORE__V1__INPUT__KIND_TOKEN_IDS;
    input->token_ids = token_ids;
    return input;
}

Lmscore__V1__Input *input_from_ids(const int32_t *ids, size_t n)
{
    int32_t *copy = NULL;
    if (n > 0) {
        if (!(copy = malloc(n * sizeof *copy))) return NULL;
        memcpy(copy, ids, n * sizeof *copy);
    }
    return input_taking_ids(copy, n);
}

Lmscore__V1__Input *input_from_token_ids(const char *text, const char *what)
{
    int32_t *ids;
    size_t n;
    if (!parse_token_ids(text, what, &ids, &n)) return NULL;
    Lmscore__V1__Input *input = input_taking_ids(ids, n);
    if (!input) fprintf(stderr, "lmscore: out of memory\n");
    return input;
}

void input_free(Lmscore__V1__Input *input)
{
    if (input) protobuf_c_message_free_unpacked(&input->base, NULL);
}

bool input_list_push(input_list *list, Lmscore__V1__Input *input)
{
    if (!input) return false;
    if (!array_push((void **)&list->items, &list->count, &list->cap, sizeof input, &input)) {
        input_free(input);
        return false;
    }
    return true;
}

void input_list_clear(input_list *list)
{
    for (size_t i = 0; i < list->count; i++)
        input_free(list->items[i]);
    list->count = 0;
}

void input_list_free(input_list *list)
{
    input_list_clear(list);
    free(list->items);
    memset(list, 0, sizeof *list);
}
