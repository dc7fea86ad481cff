/*
 * llama_peer.h — llama.cpp as the peer the engine is measured against: a
 * GGUF file opened with llama.cpp's own prebuilt libraries (the pinned npm
 * package of tests/ggml/npm) and a score request run as llama.cpp runs it
 * with its own prefix reuse, giving the engine's log-probabilities
 * (lmscore.h) for the same sequences.
 */
#ifndef LMS_BENCH_LLAMA_PEER_H
#define LMS_BENCH_LLAMA_PEER_H

#include <stdbool.h>
#include <stdint.h>

#include "lmscore.h"

typedef struct llama_peer llama_peer;

/* The context a peer makes: its KV cache holds max_tokens cells, shared by
 * up to max_sequences sequences (the query's and one per item). Attention
 * is llama.cpp's default (flash attention where the CPU backend has it, K
 * and V stored as f16), or with f32_attention f32 K and V without flash
 * attention: llama.cpp's f32 path, to compare with the engine's f32. */
typedef struct {
    int32_t threads;
    int32_t max_tokens;
    int32_t max_sequences;
    bool f32_attention;
} llama_peer_settings;

/* Loads lib_dir's libllama (and, from the same directory, the CPU backend
 * llama.cpp picks for this CPU), then the model and a context for settings.
 * One peer per process. */
lms_status llama_peer_open(const char *lib_dir, const char *model_path,
                           const llama_peer_settings *settings, llama_peer **out, lms_error *err);
void llama_peer_close(llama_peer *peer);

/* The instruction-set features the loaded CPU backend was built for, as
 * llama.cpp reports them (e.g. "AVX AVX2 F16C FMA BMI2 REPACK"). */
const char *llama_peer_features(const llama_peer *peer);

/* Scores req (query first, no empty item) as llama.cpp's prefix reuse
 * does: the query decoded once into sequence 0, its KV cells shared with
 * each item's sequence, all items in one batch with an output at each
 * item's last token; logprobs[i * n_labels + j] = log softmax over the full
 * vocabulary of those logits, at label j. */
lms_status llama_peer_score(llama_peer *peer, const lms_score_request *req, float *logprobs,
                            lms_error *err);

#endif
