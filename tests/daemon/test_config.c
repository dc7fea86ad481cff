/*
 * test_config.c — config.c: flags over LMSCORE_* variables over the
 * defaults, units, ranges, the cross-option checks, and errors that name
 * the flag at fault and change nothing the caller sees as a result.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"

/* config_parse over "lmscored" and the NULL-terminated arguments in ap. */
static lms_status parse_args(lmscored_config *cfg, config_outcome *outcome, lms_error *err,
                             va_list ap)
{
    char *argv[32] = {"lmscored"};
    int argc = 1;
    for (char *a; (a = va_arg(ap, char *)) != NULL && argc < 31;)
        argv[argc++] = a;
    memset(err, 0, sizeof *err);
    return config_parse(argc, argv, cfg, outcome, err);
}

static lms_status parse(lmscored_config *cfg, config_outcome *outcome, lms_error *err, ...)
{
    va_list ap;
    va_start(ap, err);
    lms_status st = parse_args(cfg, outcome, err, ap);
    va_end(ap);
    return st;
}

static void expect_bad_flag(const char *field, ...)
{
    lmscored_config cfg;
    config_outcome outcome;
    lms_error err;
    va_list ap;
    va_start(ap, field);
    lms_status st = parse_args(&cfg, &outcome, &err, ap);
    va_end(ap);
    assert_int_equal(st, LMS_ERR_INVALID_ARGUMENT);
    assert_string_equal(err.reason, "bad_flag");
    assert_string_equal(err.field, field);
    assert_true(err.msg[0] != '\0');
}

static void test_defaults(void **state)
{
    (void)state;
    lmscored_config cfg;
    config_outcome outcome;
    lms_error err;
    assert_int_equal(parse(&cfg, &outcome, &err, "--model", "m.gguf", NULL), LMS_OK);
    assert_int_equal(outcome, CONFIG_RUN);
    assert_string_equal(cfg.model_path, "m.gguf");
    assert_string_equal(cfg.listen, "0.0.0.0:50051");
    assert_string_equal(cfg.metrics_listen, "");
    assert_int_equal(cfg.workers, 1);
    assert_int_equal(cfg.queue_depth, 64);
    assert_int_equal(cfg.max_message_bytes, 16 << 20);
    assert_int_equal(cfg.max_receive_buffer, 64 << 20); /* 64M over 4 x 16M */
    assert_int_equal(cfg.max_text_bytes, 1 << 20);
    assert_int_equal(cfg.max_items, 10000);
    assert_int_equal(cfg.drain_timeout_ms, 30000);
    assert_int_equal(cfg.delimiter, -1);
    assert_int_equal(cfg.log_level, LOG_INFO);
    assert_int_equal(cfg.kv_dtype, LMS_KV_DTYPE_AUTO);
}

/* --kv-cache-dtype and LMSCORE_KV_CACHE_DTYPE: the flag over the variable. */
static void test_kv_cache_dtype(void **state)
{
    (void)state;
    lmscored_config cfg;
    config_outcome outcome;
    lms_error err;
    setenv("LMSCORE_KV_CACHE_DTYPE", "f16", 1);
    assert_int_equal(parse(&cfg, &outcome, &err, "--model", "m", NULL), LMS_OK);
    assert_int_equal(cfg.kv_dtype, LMS_KV_DTYPE_F16);
    assert_int_equal(parse(&cfg, &outcome, &err, "--model", "m", "--kv-cache-dtype", "f32", NULL),
                     LMS_OK);
    unsetenv("LMSCORE_KV_CACHE_DTYPE");
    assert_int_equal(cfg.kv_dtype, LMS_KV_DTYPE_F32);
}

static void test_units_and_environment(void **state)
{
    (void)state;
    setenv("LMSCORE_WORKERS", "3", 1);
    setenv("LMSCORE_DRAIN_TIMEOUT", "2m", 1);
    lmscored_config cfg;
    config_outcome outcome;
    lms_error err;
    assert_int_equal(parse(&cfg, &outcome, &err, "--model", "m", "--max-message-bytes", "32M",
                           "--max-text-bytes", "64k", "--drain-timeout", "500ms",
                           "--max-connection-idle", "7", NULL),
                     LMS_OK);
    unsetenv("LMSCORE_WORKERS");
    unsetenv("LMSCORE_DRAIN_TIMEOUT");
    assert_int_equal(cfg.workers, 3);            /* the variable */
    assert_int_equal(cfg.drain_timeout_ms, 500); /* the flag wins over the variable */
    assert_int_equal(cfg.max_message_bytes, 32 << 20);
    assert_int_equal(cfg.max_receive_buffer, 128 << 20); /* 4 x the message limit */
    assert_int_equal(cfg.max_text_bytes, 64 << 10);
    assert_int_equal(cfg.max_connection_idle_ms, 7000); /* a bare duration is seconds */
}

static void test_bad_values_name_their_flag(void **state)
{
    (void)state;
    expect_bad_flag("model", NULL);
    expect_bad_flag("workers", "--model", "m", "--workers", "0", NULL);
    expect_bad_flag("workers", "--model", "m", "--workers", "2x", NULL);
    expect_bad_flag("max-text-bytes", "--model", "m", "--max-text-bytes", "0", NULL);
    expect_bad_flag("drain-timeout", "--model", "m", "--drain-timeout", "5h", NULL);
    expect_bad_flag("max-message-bytes", "--model", "m", "--max-message-bytes", "1", NULL);
    expect_bad_flag("algorithm", "--model", "m", "--algorithm", "fast", NULL);
    expect_bad_flag("kv-cache-dtype", "--model", "m", "--kv-cache-dtype", "bf16", NULL);
    expect_bad_flag("log-level", "--model", "m", "--log-level", "loud", NULL);
    expect_bad_flag("max-receive-buffer", "--model", "m", "--max-message-bytes", "8M",
                    "--max-receive-buffer", "4M", NULL);
    expect_bad_flag("tls-cert", "--model", "m", "--tls-cert", "c.pem", NULL);
    expect_bad_flag("--no-such-flag", "--model", "m", "--no-such-flag", "1", NULL);
    expect_bad_flag("extra", "--model", "m", "extra", NULL);
    setenv("LMSCORE_QUEUE_DEPTH", "-1", 1);
    expect_bad_flag("queue-depth", "--model", "m", NULL);
    unsetenv("LMSCORE_QUEUE_DEPTH");
}

/* --served-model-name: names kept as given (the variable too); empty
 * names, a name twice, a control byte or more than the limit refused. */
static void test_served_model_names(void **state)
{
    (void)state;
    lmscored_config cfg;
    config_outcome outcome;
    lms_error err;
    assert_int_equal(parse(&cfg, &outcome, &err, "--model", "m", NULL), LMS_OK);
    assert_string_equal(cfg.served_model_names, "");
    setenv("LMSCORE_SERVED_MODEL_NAME", "rerank-v3.5,tiny", 1);
    assert_int_equal(parse(&cfg, &outcome, &err, "--model", "m", NULL), LMS_OK);
    unsetenv("LMSCORE_SERVED_MODEL_NAME");
    assert_string_equal(cfg.served_model_names, "rerank-v3.5,tiny");
    char many[256] = "m0";
    for (int i = 1; i < CONFIG_MAX_SERVED_NAMES; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), ",m%d", i);
    assert_int_equal(parse(&cfg, &outcome, &err, "--model", "m", "--served-model-name", many, NULL),
                     LMS_OK);
    strcat(many, ",one-more");
    const char *bad[] = {"a,", ",a", "a,,b", "a,b,a", "a\tb", "a\x7f", many};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        expect_bad_flag("served-model-name", "--model", "m", "--served-model-name", bad[i], NULL);
}

/* ":PORT" in a listen flag (or its variable) is every address; other
 * values, and a path flag's leading colon, are kept as given; a value that
 * does not fit once the host is added is refused. */
static void test_colon_port_is_every_address(void **state)
{
    (void)state;
    lmscored_config cfg;
    config_outcome outcome;
    lms_error err;
    setenv("LMSCORE_METRICS_LISTEN", ":9464", 1);
    assert_int_equal(parse(&cfg, &outcome, &err, "--model", ":m", "--listen", ":50620",
                           "--http-listen", "[::1]:8080", NULL),
                     LMS_OK);
    unsetenv("LMSCORE_METRICS_LISTEN");
    assert_string_equal(cfg.listen, "0.0.0.0:50620");
    assert_string_equal(cfg.metrics_listen, "0.0.0.0:9464");
    assert_string_equal(cfg.http_listen, "[::1]:8080");
    assert_string_equal(cfg.model_path, ":m");
    char longest[sizeof cfg.listen] = ":";
    memset(longest + 1, '9', sizeof longest - 2);
    expect_bad_flag("listen", "--model", "m", "--listen", longest, NULL);
    longest[sizeof longest - 1 - strlen("0.0.0.0")] = '\0';
    assert_int_equal(parse(&cfg, &outcome, &err, "--model", "m", "--listen", longest, NULL),
                     LMS_OK);
    assert_int_equal(strlen(cfg.listen), sizeof cfg.listen - 1);
}

static void test_help_and_version_exit(void **state)
{
    (void)state;
    lmscored_config cfg;
    config_outcome outcome;
    lms_error err;
    assert_int_equal(parse(&cfg, &outcome, &err, "--version", NULL), LMS_OK);
    assert_int_equal(outcome, CONFIG_EXIT);
    assert_int_equal(parse(&cfg, &outcome, &err, "--help", NULL), LMS_OK);
    assert_int_equal(outcome, CONFIG_EXIT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_units_and_environment),
        cmocka_unit_test(test_kv_cache_dtype),
        cmocka_unit_test(test_bad_values_name_their_flag),
        cmocka_unit_test(test_served_model_names),
        cmocka_unit_test(test_colon_port_is_every_address),
        cmocka_unit_test(test_help_and_version_exit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
