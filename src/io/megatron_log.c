/* megatron_log.c — a Megatron-LM training log read (megatron.h): the argument dump, the iteration
 * lines and the memory reports, in the formats of Megatron-LM's megatron/training/arguments.py
 * (_print_args), training.py (training_log) and utils/common_utils.py (report_memory).
 *
 * Lines are matched by their markers anywhere in the line, so that prefixes added by launchers
 * and schedulers ("0: ", "[rank0]:", timestamps) do not matter; everything else in the log is
 * skipped. The file is streamed line by line: a log may be larger than the JSON inputs' bound. */
#define _POSIX_C_SOURCE 200809L /* getline */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io-private.h"
#include "io/megatron.h"

#define DUMP_BEGIN "------------------------ arguments ------------------------"
#define DUMP_END "-------------------- end of arguments ---------------------"

void pn_megatron_log_free(PnMegatronLog *log)
{
  if (log == NULL)
    return;
  g_array_free(log->iterations, TRUE);
  g_array_free(log->memory, TRUE);
  g_ptr_array_free(log->dump, TRUE);
  g_free(log);
}

/* The number after `marker` in `line`, or NAN. */
static double number_after(const char *line, const char *marker)
{
  const char *p = strstr(line, marker);
  if (p == NULL)
    return (double)NAN;
  p += strlen(marker);
  char *end = NULL;
  double v  = g_ascii_strtod(p, &end);
  return end != p && isfinite(v) ? v : (double)NAN;
}

/* " iteration       43/     100 | ... elapsed time per iteration (ms): 5444.9 | ..." */
static void read_iteration(const char *line, PnMegatronLog *log)
{
  const char *it = strstr(line, " iteration ");
  double ms      = number_after(line, "elapsed time per iteration (ms):");
  if (it == NULL || isnan(ms))
    return;
  char *end = NULL;
  gint64 n  = g_ascii_strtoll(it + strlen(" iteration "), &end, 10);
  if (end == it + strlen(" iteration ") || *end != '/')
    return;
  PnMegatronLogIteration r = {
      .iteration = n, .elapsed_ms = ms, .tflops_per_gpu = number_after(line, "throughput per GPU (TFLOP/s/GPU):")};
  g_array_append_val(log->iterations, r);
}

/* "[Rank 0] (after 10 iterations) memory (MB) | allocated: ... | max allocated: ... | ..." */
static void read_memory(const char *line, PnMegatronLog *log)
{
  const char *rank = strstr(line, "[Rank ");
  if (rank == NULL || strstr(line, "memory (MB)") == NULL)
    return;
  PnMegatronLogMemory m = {.rank              = (int)g_ascii_strtoll(rank + strlen("[Rank "), NULL, 10),
                           .after_iteration   = (int64_t)number_after(line, "(after "),
                           .allocated_mib     = number_after(line, "| allocated:"),
                           .max_allocated_mib = number_after(line, "| max allocated:"),
                           .reserved_mib      = number_after(line, "| reserved:"),
                           .max_reserved_mib  = number_after(line, "| max reserved:")};
  if (!isnan(m.max_allocated_mib))
    g_array_append_val(log->memory, m);
}

/* "  num_layers ...................................... 32": the name, the dots (48 - its length,
 * none from 48 characters on) and the value as Python's str() prints it. */
static void read_dump_line(const char *line, PnMegatronLog *log)
{
  const char *dots = strstr(line, " .");
  const char *name_end, *value;
  if (dots != NULL) {
    name_end = dots;
    value    = dots + 1;
    while (*value == '.')
      value++;
  } else if ((name_end = strstr(line, "  ")) != NULL && name_end > line) {
    value = name_end; /* a name of 48 characters or more: no dots, two spaces */
  } else {
    return;
  }
  const char *name = name_end;
  while (name > line && (g_ascii_isalnum(name[-1]) || name[-1] == '_'))
    name--;
  if (name == name_end || *value != ' ')
    return;
  g_ptr_array_add(log->dump, g_strndup(name, (gsize)(name_end - name)));
  g_ptr_array_add(log->dump, g_strchomp(g_strdup(value + 1)));
}

PnMegatronLog *pn_megatron_log_read(const char *path, GError **error)
{
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    int e = errno;
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_FILE, "%s: cannot open: %s", path, g_strerror(e));
    return NULL;
  }
  PnMegatronLog *log = g_new0(PnMegatronLog, 1);
  log->iterations    = g_array_new(FALSE, FALSE, sizeof(PnMegatronLogIteration));
  log->memory        = g_array_new(FALSE, FALSE, sizeof(PnMegatronLogMemory));
  log->dump          = g_ptr_array_new_with_free_func(g_free);
  char *line         = NULL;
  size_t cap         = 0;
  bool in_dump = false, dumped = false;
  while (getline(&line, &cap, f) >= 0) {
    g_strchomp(line);
    if (strstr(line, DUMP_BEGIN) != NULL && !dumped) {
      in_dump = true;
    } else if (in_dump && strstr(line, DUMP_END) != NULL) {
      in_dump = false;
      dumped  = true; /* the first dump: a restarted job prints its own again */
    } else if (in_dump) {
      read_dump_line(line, log);
    } else {
      read_iteration(line, log);
      read_memory(line, log);
      /* megatron/core/optimizer/__init__.py, when neither TE's nor Apex's FusedAdam imports */
      if (strstr(line, "Transformer Engine and Apex are not installed. Falling back to Torch optimizers") != NULL)
        log->without_te_apex = true;
    }
  }
  bool failed = ferror(f) != 0;
  free(line);
  fclose(f);
  if (failed) {
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_FILE, "%s: read error", path);
    pn_megatron_log_free(log);
    return NULL;
  }
  return log;
}

/* ---- the argument dump as a launch line ---- */

/* The flag of Megatron-LM that sets attribute `dest` in the way `value` needs, or NULL. */
static const PnMegatronFlag *flag_of(const char *dest, const char *value)
{
  bool is_true = strcmp(value, "True") == 0, is_false = strcmp(value, "False") == 0;
  for (size_t i = 0; i < pn_megatron_n_flags; i++) {
    const PnMegatronFlag *f = &pn_megatron_flags[i];
    if (strcmp(f->dest, dest) != 0)
      continue;
    if ((f->arity == PN_MEGATRON_SETS_TRUE && is_true) || (f->arity == PN_MEGATRON_SETS_FALSE && is_false) ||
        (f->arity >= PN_MEGATRON_ONE_VALUE && !is_true && !is_false))
      return f;
  }
  return NULL;
}

/* A value as Python printed it, into command-line words: "['a', 'b']" into a and b, an enum
 * member "AttnBackend.auto" into auto. */
static void push_value(GPtrArray *out, const char *value)
{
  gsize n = strlen(value);
  if (n >= 2 && value[0] == '[' && value[n - 1] == ']') {
    g_autofree char *inner = g_strndup(value + 1, n - 2);
    g_auto(GStrv) items    = g_strsplit(inner, ",", -1);
    for (char **it = items; *it; it++) {
      char *v = g_strstrip(*it);
      gsize m = strlen(v);
      if (m >= 2 && (v[0] == '\'' || v[0] == '"'))
        g_ptr_array_add(out, g_strndup(v + 1, m - 2));
      else if (m > 0)
        g_ptr_array_add(out, g_strdup(v));
    }
    return;
  }
  /* arguments.py's dtype_map backwards: the dump prints the torch dtype a dtype flag became */
  static const char *const dtypes[][2] = {
      {"torch.float32", "fp32"}, {"torch.bfloat16", "bf16"}, {"torch.float16", "fp16"}, {"torch.uint8", "fp8"}};
  for (gsize i = 0; i < G_N_ELEMENTS(dtypes); i++)
    if (strcmp(value, dtypes[i][0]) == 0) {
      g_ptr_array_add(out, g_strdup(dtypes[i][1]));
      return;
    }
  const char *dot = strchr(value, '.');
  if (dot != NULL && g_ascii_isupper(value[0]) && strchr(dot + 1, '.') == NULL && g_ascii_isalpha(dot[1]))
    value = dot + 1;
  g_ptr_array_add(out, g_strdup(value));
}

static const char *dumped(const PnMegatronLog *log, const char *name)
{
  for (guint i = 0; i + 1 < log->dump->len; i += 2)
    if (strcmp(g_ptr_array_index(log->dump, i), name) == 0)
      return g_ptr_array_index(log->dump, i + 1);
  return "None";
}

/* The environment the run must have had, though the log does not print it: on Hopper, Megatron-LM
 * asserts CUDA_DEVICE_MAX_CONNECTIONS=1 with TP or CP > 1, unless FSDP or EP overlap is on
 * (arguments.py, validate_args). */
static void implied_env(const PnMegatronLog *log, GPtrArray *env)
{
  bool tp_cp = strcmp(dumped(log, "tensor_model_parallel_size"), "1") != 0 ||
               strcmp(dumped(log, "context_parallel_size"), "1") != 0;
  bool exempt = strcmp(dumped(log, "use_torch_fsdp2"), "True") == 0 ||
                strcmp(dumped(log, "use_megatron_fsdp"), "True") == 0 ||
                strcmp(dumped(log, "overlap_moe_expert_parallel_comm"), "True") == 0;
  if (tp_cp && !exempt && strcmp(dumped(log, "tensor_model_parallel_size"), "None") != 0)
    g_ptr_array_add(env, g_strdup("CUDA_DEVICE_MAX_CONNECTIONS=1"));
}

char **pn_megatron_log_args(const PnMegatronLog *log)
{
  if (log->dump->len == 0)
    return NULL;
  GPtrArray *env = g_ptr_array_new(), *args = g_ptr_array_new();
  implied_env(log, env);
  const char *padded_vocab = NULL;
  bool vocab               = false;
  for (guint i = 0; i + 1 < log->dump->len; i += 2) {
    const char *name = g_ptr_array_index(log->dump, i), *value = g_ptr_array_index(log->dump, i + 1);
    if (strcmp(name, "world_size") == 0)
      g_ptr_array_add(env, g_strdup_printf("WORLD_SIZE=%s", value));
    if (strcmp(name, "padded_vocab_size") == 0)
      padded_vocab = value;
    const PnMegatronFlag *f = strcmp(value, "None") == 0 ? NULL : flag_of(name, value);
    if (f == NULL)
      continue; /* unset, or an attribute Megatron-LM derives */
    vocab |= strcmp(name, "vocab_size") == 0;
    g_ptr_array_add(args, g_strdup(f->name));
    if (f->arity >= PN_MEGATRON_ONE_VALUE)
      push_value(args, value);
  }
  /* the dump holds the value after validate_args: bf16 gradients reduced in bf16 are what
   * --grad-reduce-in-bf16 asks for (without it, --bf16 turns fp32 accumulation on) */
  if (strcmp(dumped(log, "bf16"), "True") == 0 &&
      strcmp(dumped(log, "accumulate_allreduce_grads_in_fp32"), "False") == 0 &&
      strcmp(dumped(log, "grad_reduce_in_bf16"), "True") != 0)
    g_ptr_array_add(args, g_strdup("--grad-reduce-in-bf16"));
  if (!vocab && padded_vocab != NULL) { /* a tokenizer's vocabulary: the dump has its padded size */
    g_ptr_array_add(args, g_strdup("--vocab-size"));
    g_ptr_array_add(args, g_strdup(padded_vocab));
  }
  for (guint i = 0; i < args->len; i++)
    g_ptr_array_add(env, g_ptr_array_index(args, i));
  g_ptr_array_free(args, TRUE);
  g_ptr_array_add(env, NULL);
  return (char **)g_ptr_array_free(env, FALSE);
}
