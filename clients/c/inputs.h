/*
 * inputs.h — lmscore.v1.Input values (a text or a list of token ids) built
 * from command-line strings and input lines, and lists of them.
 */
#ifndef LMSCORE_CLI_INPUTS_H
#define LMSCORE_CLI_INPUTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lmscore/v1/score.pb-c.h"

/* Parses "1,2,3" or "1 2 3" (commas and/or blanks between int32 values) into
 * a new array (*ids, caller frees; NULL when empty). False, with a message on
 * stderr naming `what`, when text holds anything else. */
bool parse_token_ids(const char *text, const char *what, int32_t **ids, size_t *n);

/* A new Input holding a copy of text; NULL when out of memory. */
Lmscore__V1__Input *input_from_text(const char *text);
/* A new Input holding a copy of ids[0..n); NULL when out of memory. */
Lmscore__V1__Input *input_from_ids(const int32_t *ids, size_t n);
/* A new Input of the token ids in text (see parse_token_ids); NULL on error. */
Lmscore__V1__Input *input_from_token_ids(const char *text, const char *what);
void input_free(Lmscore__V1__Input *input);

/* An owned list of inputs. */
typedef struct {
    Lmscore__V1__Input **items;
    size_t count;
    size_t cap;
} input_list;

/* Takes ownership of input (freed even when this fails); false when out of memory. */
bool input_list_push(input_list *list, Lmscore__V1__Input *input);
/* Frees every input and empties the list (its storage is kept for reuse). */
void input_list_clear(input_list *list);
void input_list_free(input_list *list);

#endif
