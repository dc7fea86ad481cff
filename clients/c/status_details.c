/*
 * status_details.c — reads google.rpc.ErrorInfo out of the
 * grpc-status-details-bin trailer (the core API hands binary headers over
 * already base64-decoded).
 */
#include "status_details.h"

#include <stdio.h>
#include <string.h>

#include "google/rpc/error_details.pb-c.h"
#include "google/rpc/status.pb-c.h"

static const char DETAILS_KEY[] = "grpc-status-details-bin";
static const char ERROR_INFO_TYPE[] = "type.googleapis.com/google.rpc.ErrorInfo";

static bool slice_equals(grpc_slice slice, const char *text)
{
    size_t len = strlen(text);
    return GRPC_SLICE_LENGTH(slice) == len && memcmp(GRPC_SLICE_START_PTR(slice), text, len) == 0;
}

static void copy_text(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
}

static void take_error_info(const Google__Rpc__ErrorInfo *info, rpc_status *st)
{
    copy_text(st->reason, sizeof st->reason, info->reason);
    copy_text(st->domain, sizeof st->domain, info->domain);
    for (size_t i = 0; i < info->n_metadata; i++) {
        if (strcmp(info->metadata[i]->key, "field") == 0)
            copy_text(st->field, sizeof st->field, info->metadata[i]->value);
    }
}

void status_details_decode(const grpc_metadata_array *trailing, rpc_status *st)
{
    for (size_t m = 0; m < trailing->count; m++) {
        const grpc_metadata *md = &trailing->metadata[m];
        if (!slice_equals(md->key, DETAILS_KEY)) continue;
        Google__Rpc__Status *status = google__rpc__status__unpack(
            NULL, GRPC_SLICE_LENGTH(md->value), GRPC_SLICE_START_PTR(md->value));
        if (!status) return;
        for (size_t d = 0; d < status->n_details && !st->reason[0]; d++) {
            const Google__Protobuf__Any *any = status->details[d];
            if (strcmp(any->type_url, ERROR_INFO_TYPE) != 0) continue;
            Google__Rpc__ErrorInfo *info =
                google__rpc__error_info__unpack(NULL, any->value.len, any->value.data);
            if (info) {
                take_error_info(info, st);
                google__rpc__error_info__free_unpacked(info, NULL);
            }
        }
        google__rpc__status__free_unpacked(status, NULL);
        return;
    }
}
