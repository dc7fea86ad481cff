/*
 * mf_safetensors.c — the safetensors head encoder (see mf_safetensors.h).
 */
#include "mf_safetensors.h"

#include <stdio.h>
#include <string.h>

/* s as a JSON string: quoted, with '"', '\\' and control bytes escaped. */
static void put_json_string(mf_buf *b, const char *s)
{
    mf_buf_u8(b, '"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            mf_buf_u8(b, '\\');
            mf_buf_u8(b, c);
        } else if (c < 0x20) {
            char esc[8];
            snprintf(esc, sizeof esc, "\\u%04x", c);
            mf_buf_put(b, esc, 6);
        } else {
            mf_buf_u8(b, c);
        }
    }
    mf_buf_u8(b, '"');
}

static void put_u64_text(mf_buf *b, uint64_t v)
{
    char text[24];
    int n = snprintf(text, sizeof text, "%llu", (unsigned long long)v);
    mf_buf_put(b, text, (size_t)n);
}

static void put_text(mf_buf *b, const char *s)
{
    mf_buf_put(b, s, strlen(s));
}

void mf_safetensors_head(const mf_safetensor *tensors, size_t n, mf_buf *out)
{
    mf_buf json = {0};
    put_text(&json, "{\"__metadata__\":{\"format\":\"pt\"}");
    uint64_t offset = 0;
    for (size_t i = 0; i < n; i++) {
        const mf_safetensor *t = &tensors[i];
        mf_buf_u8(&json, ',');
        put_json_string(&json, t->name);
        put_text(&json, ":{\"dtype\":");
        put_json_string(&json, t->dtype);
        put_text(&json, ",\"shape\":[");
        for (uint32_t d = 0; d < t->n_dims; d++) {
            if (d) mf_buf_u8(&json, ',');
            put_u64_text(&json, t->shape[d]);
        }
        put_text(&json, "],\"data_offsets\":[");
        put_u64_text(&json, offset);
        mf_buf_u8(&json, ',');
        offset += t->n_bytes;
        put_u64_text(&json, offset);
        put_text(&json, "]}");
    }
    mf_buf_u8(&json, '}');
    mf_buf_pad(&json, 8, ' ');
    mf_buf_u64(out, json.len);
    mf_buf_put(out, json.data, json.len);
    if (json.failed) out->failed = 1;
    mf_buf_free(&json);
}
