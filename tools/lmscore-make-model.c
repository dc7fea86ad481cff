/*
 * lmscore-make-model — writes a checkpoint with seeded random weights and a
 * real tokenizer, as a GGUF file and/or a Hugging Face directory holding the
 * same numbers. Owns the command line; the work is in tools/make_model/.
 *
 *   lmscore-make-model --preset tiny-qwen3 --tokenizers build/tokenizers \
 *       --gguf build/models/tiny-qwen3.gguf --hf build/models/tiny-qwen3-hf
 *
 * See docs/models.md for the presets, the flags and the weight scheme.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clock.h"
#include "make_model/mm_gguf.h"
#include "make_model/mm_hf.h"
#include "make_model/mm_spec.h"
#include "make_model/mm_tensors.h"
#include "make_model/mm_vocab.h"

static const char USAGE[] =
    "usage: lmscore-make-model [--preset NAME] (--gguf FILE | --hf DIR)... [options]\n"
    "  --preset NAME          tiny-qwen3 (default), tiny-qwen2, tiny-llama, tiny-llama3,\n"
    "                         qwen3-0.6b, qwen3-4b, qwen3-8b\n"
    "  --gguf FILE            write a GGUF v3 file\n"
    "  --hf DIR               write a Hugging Face directory\n"
    "  --tokenizers ROOT      where fetch-tokenizers.sh put the tokenizers\n"
    "                         (default $LMSCORE_TOKENIZERS, else build/tokenizers)\n"
    "  --vocab-from NAME|DIR  tokenizer: a name under ROOT or a directory\n"
    "  --tokenizer-pre NAME   tokenizer.ggml.pre for byte-level BPE (qwen2, llama-bpe)\n"
    "  --name NAME            general.name\n"
    "  --arch llama|qwen2|qwen3\n"
    "  --layers N --hidden N --heads N --kv-heads N --head-dim N --ffn N\n"
    "  --vocab-size N         embedding rows (default: the preset's, else the tokenizer's)\n"
    "  --context N --rms-eps X --rope-theta X\n"
    "  --tied | --untied      share the embedding with the output head or not\n"
    "  --dtype f32|f16|bf16|q4_0|q4_1|q5_0|q5_1|q8_0|q4_K|q5_K|q6_K\n"
    "                         (the block types: GGUF only; the HF twin is f32)\n"
    "  --seed N\n"
    "  --projection-std X     draw q, k, v, o, gate, up, down at std X (default 1/sqrt(fan_in))\n"
    "  --rope-scaling none|linear|llama3 --rope-factor X --rope-low-freq-factor X\n"
    "  --rope-high-freq-factor X --rope-original-context N\n"
    "  --shards N             split the safetensors into N files with an index\n";

enum {
    OPT_PRESET = 256,
    OPT_GGUF,
    OPT_HF,
    OPT_TOKENIZERS,
    OPT_VOCAB_FROM,
    OPT_TOKENIZER_PRE,
    OPT_NAME,
    OPT_ARCH,
    OPT_LAYERS,
    OPT_HIDDEN,
    OPT_HEADS,
    OPT_KV_HEADS,
    OPT_HEAD_DIM,
    OPT_FFN,
    OPT_VOCAB_SIZE,
    OPT_CONTEXT,
    OPT_RMS_EPS,
    OPT_ROPE_THETA,
    OPT_TIED,
    OPT_UNTIED,
    OPT_DTYPE,
    OPT_SEED,
    OPT_PROJECTION_STD,
    OPT_ROPE_SCALING,
    OPT_ROPE_FACTOR,
    OPT_ROPE_LOW,
    OPT_ROPE_HIGH,
    OPT_ROPE_ORIGINAL,
    OPT_SHARDS,
    OPT_HELP,
};

static const struct option OPTIONS[] = {
    {"preset", required_argument, NULL, OPT_PRESET},
    {"gguf", required_argument, NULL, OPT_GGUF},
    {"hf", required_argument, NULL, OPT_HF},
    {"tokenizers", required_argument, NULL, OPT_TOKENIZERS},
    {"vocab-from", required_argument, NULL, OPT_VOCAB_FROM},
    {"tokenizer-pre", required_argument, NULL, OPT_TOKENIZER_PRE},
    {"name", required_argument, NULL, OPT_NAME},
    {"arch", required_argument, NULL, OPT_ARCH},
    {"layers", required_argument, NULL, OPT_LAYERS},
    {"hidden", required_argument, NULL, OPT_HIDDEN},
    {"heads", required_argument, NULL, OPT_HEADS},
    {"kv-heads", required_argument, NULL, OPT_KV_HEADS},
    {"head-dim", required_argument, NULL, OPT_HEAD_DIM},
    {"ffn", required_argument, NULL, OPT_FFN},
    {"vocab-size", required_argument, NULL, OPT_VOCAB_SIZE},
    {"context", required_argument, NULL, OPT_CONTEXT},
    {"rms-eps", required_argument, NULL, OPT_RMS_EPS},
    {"rope-theta", required_argument, NULL, OPT_ROPE_THETA},
    {"tied", no_argument, NULL, OPT_TIED},
    {"untied", no_argument, NULL, OPT_UNTIED},
    {"dtype", required_argument, NULL, OPT_DTYPE},
    {"seed", required_argument, NULL, OPT_SEED},
    {"projection-std", required_argument, NULL, OPT_PROJECTION_STD},
    {"rope-scaling", required_argument, NULL, OPT_ROPE_SCALING},
    {"rope-factor", required_argument, NULL, OPT_ROPE_FACTOR},
    {"rope-low-freq-factor", required_argument, NULL, OPT_ROPE_LOW},
    {"rope-high-freq-factor", required_argument, NULL, OPT_ROPE_HIGH},
    {"rope-original-context", required_argument, NULL, OPT_ROPE_ORIGINAL},
    {"shards", required_argument, NULL, OPT_SHARDS},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

typedef struct {
    mm_spec spec;
    const char *gguf_path;
    const char *hf_dir;
    const char *tokenizers_root;
} request;

static lms_status parse_int(const char *flag, const char *text, int64_t lo, int64_t hi,
                            int64_t *out, lms_error *err)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end != '\0' || v < lo || v > hi)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_flag", flag,
                        "--%s wants an integer in [%lld, %lld], not '%s'", flag, (long long)lo,
                        (long long)hi, text);
    *out = v;
    return LMS_OK;
}

static lms_status parse_i32(const char *flag, const char *text, int32_t *out, lms_error *err)
{
    int64_t v = 0;
    lms_status st = parse_int(flag, text, 1, INT32_MAX, &v, err);
    if (st == LMS_OK) *out = (int32_t)v;
    return st;
}

static lms_status parse_double(const char *flag, const char *text, double *out, lms_error *err)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end != '\0' || !isfinite(v) || v <= 0)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_flag", flag,
                        "--%s wants a positive number, not '%s'", flag, text);
    *out = v;
    return LMS_OK;
}

static lms_status copy_text(const char *flag, const char *text, char *dst, size_t cap,
                            lms_error *err)
{
    if (strlen(text) >= cap)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_flag", flag, "--%s is too long", flag);
    memcpy(dst, text, strlen(text) + 1);
    return LMS_OK;
}

static lms_status apply_option(request *r, int opt, const char *arg, lms_error *err)
{
    mm_spec *s = &r->spec;
    int64_t seed = 0;
    lms_status st = LMS_OK;
    switch (opt) {
    case OPT_PRESET:
        break; /* applied before every other flag */
    case OPT_GGUF:
        r->gguf_path = arg;
        break;
    case OPT_HF:
        r->hf_dir = arg;
        break;
    case OPT_TOKENIZERS:
        r->tokenizers_root = arg;
        break;
    case OPT_VOCAB_FROM:
        return copy_text("vocab-from", arg, s->tokenizer, sizeof s->tokenizer, err);
    case OPT_TOKENIZER_PRE:
        return copy_text("tokenizer-pre", arg, s->tokenizer_pre, sizeof s->tokenizer_pre, err);
    case OPT_NAME:
        return copy_text("name", arg, s->name, sizeof s->name, err);
    case OPT_ARCH:
        return mm_arch_parse(arg, &s->arch, err);
    case OPT_LAYERS:
        return parse_i32("layers", arg, &s->n_layers, err);
    case OPT_HIDDEN:
        return parse_i32("hidden", arg, &s->d_model, err);
    case OPT_HEADS:
        return parse_i32("heads", arg, &s->n_heads, err);
    case OPT_KV_HEADS:
        return parse_i32("kv-heads", arg, &s->n_kv_heads, err);
    case OPT_HEAD_DIM:
        return parse_i32("head-dim", arg, &s->head_dim, err);
    case OPT_FFN:
        return parse_i32("ffn", arg, &s->d_ff, err);
    case OPT_VOCAB_SIZE:
        return parse_i32("vocab-size", arg, &s->vocab_size, err);
    case OPT_CONTEXT:
        return parse_i32("context", arg, &s->context_length, err);
    case OPT_RMS_EPS:
        return parse_double("rms-eps", arg, &s->rms_eps, err);
    case OPT_ROPE_THETA:
        return parse_double("rope-theta", arg, &s->rope_theta, err);
    case OPT_TIED:
        s->tied_embeddings = true;
        break;
    case OPT_UNTIED:
        s->tied_embeddings = false;
        break;
    case OPT_DTYPE:
        return mm_dtype_parse(arg, &s->dtype, err);
    case OPT_SEED:
        st = parse_int("seed", arg, 0, INT64_MAX, &seed, err);
        s->seed = (uint64_t)seed;
        return st;
    case OPT_PROJECTION_STD:
        return parse_double("projection-std", arg, &s->projection_std, err);
    case OPT_ROPE_SCALING:
        return mm_rope_scaling_parse(arg, &s->rope_scaling, err);
    case OPT_ROPE_FACTOR:
        return parse_double("rope-factor", arg, &s->rope_factor, err);
    case OPT_ROPE_LOW:
        return parse_double("rope-low-freq-factor", arg, &s->rope_low_freq_factor, err);
    case OPT_ROPE_HIGH:
        return parse_double("rope-high-freq-factor", arg, &s->rope_high_freq_factor, err);
    case OPT_ROPE_ORIGINAL:
        return parse_i32("rope-original-context", arg, &s->rope_original_context, err);
    case OPT_SHARDS:
        return parse_i32("shards", arg, &s->hf_shards, err);
    default:
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_flag", NULL, "unknown option\n%s",
                        USAGE);
    }
    return st;
}

/* Rope scaling asked for on the command line without its parameters gets
 * Llama 3.1's (factor 8, low 1, high 4) with the original context scaled
 * down from the model's. */
static void default_rope_parameters(mm_spec *s)
{
    if (s->rope_scaling == MM_ROPE_SCALING_NONE) return;
    if (s->rope_factor == 0) s->rope_factor = 8.0;
    if (s->rope_low_freq_factor == 0) s->rope_low_freq_factor = 1.0;
    if (s->rope_high_freq_factor == 0) s->rope_high_freq_factor = 4.0;
    if (s->rope_original_context == 0) {
        double original = s->context_length / s->rope_factor;
        s->rope_original_context = original >= 1 ? (int32_t)original : 1;
    }
}

static lms_status parse_args(int argc, char **argv, request *r, lms_error *err)
{
    const char *preset = "tiny-qwen3";
    int opt;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "", OPTIONS, NULL)) != -1) {
        if (opt == OPT_PRESET) preset = optarg;
        if (opt == OPT_HELP) {
            fputs(USAGE, stdout);
            exit(0);
        }
    }
    lms_status st = mm_spec_preset(preset, &r->spec, err);
    if (st != LMS_OK) return st;
    optind = 0; /* glibc: a full rescan */
    while (st == LMS_OK && (opt = getopt_long(argc, argv, "", OPTIONS, NULL)) != -1)
        st = apply_option(r, opt, optarg, err);
    if (st != LMS_OK) return st;
    if (optind < argc)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_flag", NULL,
                        "unexpected argument '%s'\n%s", argv[optind], USAGE);
    if (!r->gguf_path && !r->hf_dir)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "no_output", NULL,
                        "nothing to write: give --gguf and/or --hf\n%s", USAGE);
    default_rope_parameters(&r->spec);
    return mm_spec_validate(&r->spec, err);
}

/* Bytes of a file, or of the files directly inside a directory. */
static double megabytes(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) return 0.0;
    if (!S_ISDIR(st.st_mode)) return (double)st.st_size / 1e6;
    double total = 0.0;
    DIR *dir = opendir(path);
    for (struct dirent *e; dir && (e = readdir(dir));) {
        char file[4096];
        snprintf(file, sizeof file, "%s/%s", path, e->d_name);
        if (e->d_name[0] != '.' && stat(file, &st) == 0 && S_ISREG(st.st_mode))
            total += (double)st.st_size / 1e6;
    }
    if (dir) closedir(dir);
    return total;
}

static void report(const char *what, const char *path, double start)
{
    double mb = megabytes(path);
    printf("lmscore-make-model: wrote %s %s (%.1f MB) in %.2f s\n", what, path, mb,
           monotonic_seconds() - start);
}

static lms_status make(request *r, lms_error *err)
{
    mm_spec *s = &r->spec;
    char tokenizer_dir[4096];
    if (strchr(s->tokenizer, '/'))
        snprintf(tokenizer_dir, sizeof tokenizer_dir, "%s", s->tokenizer);
    else
        snprintf(tokenizer_dir, sizeof tokenizer_dir, "%s/%s", r->tokenizers_root, s->tokenizer);

    mm_vocab *vocab = NULL;
    lms_status st = mm_vocab_load(tokenizer_dir, s->vocab_size, s->fallback_bos, &vocab, err);
    if (st != LMS_OK) return st;
    s->vocab_size = vocab->n_tokens;
    if (strcmp(vocab->model, "gpt2") == 0 && s->tokenizer_pre[0] == '\0')
        st = lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "missing_tokenizer_pre", "tokenizer-pre",
                      "byte-level BPE tokenizer %s needs --tokenizer-pre", tokenizer_dir);

    mm_tensor *tensors = NULL;
    size_t n_tensors = 0;
    if (st == LMS_OK) st = mm_tensors_list(s, &tensors, &n_tensors, err);
    if (st == LMS_OK && r->gguf_path) {
        const double start = monotonic_seconds();
        st = mm_write_gguf(r->gguf_path, s, vocab, tensors, n_tensors, err);
        if (st == LMS_OK) report("GGUF", r->gguf_path, start);
    }
    if (st == LMS_OK && r->hf_dir) {
        const double start = monotonic_seconds();
        st = mm_write_hf(r->hf_dir, tokenizer_dir, s, vocab, tensors, n_tensors, err);
        if (st == LMS_OK) report("Hugging Face directory", r->hf_dir, start);
    }
    free(tensors);
    mm_vocab_free(vocab);
    return st;
}

int main(int argc, char **argv)
{
    const char *root = getenv("LMSCORE_TOKENIZERS");
    request r = {.tokenizers_root = root && *root ? root : "build/tokenizers"};
    lms_error err = {0};
    lms_status st = parse_args(argc, argv, &r, &err);
    if (st == LMS_OK) st = make(&r, &err);
    if (st != LMS_OK) {
        fprintf(stderr, "lmscore-make-model: %s: %s\n", lms_status_name(st), err.msg);
        return 1;
    }
    return 0;
}
