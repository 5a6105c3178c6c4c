// refdump-params.c: an LD_PRELOAD shim for shared/tools/llamacpp-b4748/bin/refdump that changes the
// llama_context_params refdump passes to llama_init_from_model (llama.cpp b4748, commit c392e50).
// refdump fixes n_batch = n_ubatch = 512, which aborts on a longer prompt
// (GGML_ASSERT(n_tokens_all <= cparams.n_batch)), and cannot switch on flash attention or quantize the KV cache.
//
//   gcc -O2 -shared -fPIC -o /tmp/rec/refdump-params.so refdump-params.c -ldl
//   LD_PRELOAD=/tmp/rec/refdump-params.so LD_LIBRARY_PATH=$B N_CTX=4608 $B/refdump MODEL "PROMPT" N_GEN
//
// Environment (all optional):
//   RD_BATCH=N   n_batch and n_ubatch (default: n_ctx, so the whole prompt is one batch and one ubatch)
//   RD_UBATCH=N  n_ubatch alone (after RD_BATCH)
//   RD_FA=1      flash attention on
//   RD_KV=T      K and V cache type: F32, F16, Q8_0, Q4_0 (default: refdump's, F16, or F32 under KV_F32=1)
//   RD_THREADS=N n_threads and n_threads_batch (refdump: 2)
// It prints the parameters it passes on to stderr.
//
// The struct is llama.h's llama_context_params at b4748 (120 bytes; the offsets were checked against
// refdump's machine code: n_ctx at 0, n_batch 4, n_ubatch 8, n_threads 16, type_k 88, type_v 92).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct llama_context_params {
    uint32_t n_ctx, n_batch, n_ubatch, n_seq_max;
    int32_t n_threads, n_threads_batch;
    int32_t rope_scaling_type, pooling_type, attention_type;
    float rope_freq_base, rope_freq_scale, yarn_ext_factor, yarn_attn_factor, yarn_beta_fast, yarn_beta_slow;
    uint32_t yarn_orig_ctx;
    float defrag_thold;
    void *cb_eval, *cb_eval_user_data;
    int32_t type_k, type_v; // enum ggml_type: F32 0, F16 1, Q4_0 2, Q8_0 8
    bool logits_all, embeddings, offload_kqv, flash_attn, no_perf;
    void *abort_callback, *abort_callback_data;
};
_Static_assert(sizeof(struct llama_context_params) == 120, "llama_context_params at b4748 is 120 bytes");

static int ggml_type(const char *s) {
    if (!strcmp(s, "F32")) return 0;
    if (!strcmp(s, "F16")) return 1;
    if (!strcmp(s, "Q4_0")) return 2;
    if (!strcmp(s, "Q8_0")) return 8;
    fprintf(stderr, "refdump-params: unknown RD_KV %s\n", s);
    exit(2);
}

void *llama_init_from_model(void *model, struct llama_context_params p) {
    void *(*real)(void *, struct llama_context_params) = dlsym(RTLD_NEXT, "llama_init_from_model");
    const char *s;
    p.n_batch = p.n_ubatch = p.n_ctx;
    if ((s = getenv("RD_BATCH"))) p.n_batch = p.n_ubatch = atoi(s);
    if ((s = getenv("RD_UBATCH"))) p.n_ubatch = atoi(s);
    if ((s = getenv("RD_FA"))) p.flash_attn = atoi(s) != 0;
    if ((s = getenv("RD_KV"))) p.type_k = p.type_v = ggml_type(s);
    if ((s = getenv("RD_THREADS"))) p.n_threads = p.n_threads_batch = atoi(s);
    fprintf(stderr,
            "refdump-params: n_ctx %u n_batch %u n_ubatch %u n_seq_max %u threads %d/%d rope_scaling_type %d "
            "freq_base %g freq_scale %g yarn_ext %g yarn_attn %g beta %g/%g orig_ctx %u defrag %g "
            "type_k %d type_v %d logits_all %d embeddings %d offload_kqv %d flash_attn %d no_perf %d\n",
            p.n_ctx, p.n_batch, p.n_ubatch, p.n_seq_max, p.n_threads, p.n_threads_batch, p.rope_scaling_type,
            p.rope_freq_base, p.rope_freq_scale, p.yarn_ext_factor, p.yarn_attn_factor, p.yarn_beta_fast,
            p.yarn_beta_slow, p.yarn_orig_ctx, p.defrag_thold, p.type_k, p.type_v, p.logits_all, p.embeddings,
            p.offload_kqv, p.flash_attn, p.no_perf);
    return real(model, p);
}
