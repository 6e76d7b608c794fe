/* split.c — Megatron-Core's pipeline split (split.h). */
#include "workload/split.h"

#include <stdarg.h>
#include <string.h>

#define I64 "%" G_GINT64_FORMAT
#define FIRST_PTR "/parallel/num_layers_in_first_pipeline_stage"
#define LAST_PTR "/parallel/num_layers_in_last_pipeline_stage"
#define LAYOUT_PTR "/parallel/pipeline_model_parallel_layout"
/* The text of a layout while it is unrolled: "t*0" and "(...)*0" shrink it again, so it may
 * pass the normal form's bound on the way; past this it is refused. */
#define UNROLL_MAX (1 << 20)

/* ---- layouts ---------------------------------------------------------------------------- */

/* The decimal digits at `s` (at least one), capped at `cap` + 1; *end after the last. */
static int64_t repeat_count(const char *s, const char **end, int64_t cap)
{
  int64_t n = 0;
  for (; g_ascii_isdigit(*s); s++)
    if (n <= cap)
      n = n * 10 + (*s - '0');
  *end = s;
  return MIN(n, cap + 1);
}

/* One re.sub of parse_str_to_list: with `group` r'\(([^)]+)\)\*(\d+)' (a parenthesised group,
 * without a ')' inside, repeated), else r'(.)\*(\d+)' (any character but a newline, repeated):
 * scanned left to right, each match replaced by its text n times and not scanned again. FALSE
 * when the text would pass UNROLL_MAX. */
static gboolean unroll(const char *s, bool group, GString *out)
{
  g_string_truncate(out, 0);
  for (const char *p = s; *p != '\0';) {
    const char *body = NULL, *star = NULL;
    gsize len = 0;
    if (group && *p == '(') {
      const char *close = strchr(p + 1, ')');
      if (close != NULL && close > p + 1)
        body = p + 1, len = (gsize)(close - body), star = close + 1;
    } else if (!group && *p != '\n') {
      body = p, len = 1, star = p + 1;
    }
    if (body == NULL || star[0] != '*' || !g_ascii_isdigit(star[1])) {
      g_string_append_c(out, *p++);
      continue;
    }
    const char *end;
    int64_t n = repeat_count(star + 1, &end, UNROLL_MAX);
    if ((double)n * (double)len + (double)out->len > UNROLL_MAX)
      return FALSE;
    for (int64_t i = 0; i < n; i++)
      g_string_append_len(out, body, (gssize)len);
    p = end;
  }
  return TRUE;
}

PnRule pn_workload_layout_expand(const char *layout, char *out, gsize out_size, PnRuleViolation *v)
{
  g_assert(layout != NULL && out != NULL && out_size > 0);
  /* PipelineParallelLayerLayout.parse_str_to_list: commas are cosmetic and go first, then the
   * parenthesised groups are unrolled, then single characters */
  g_autoptr(GString) plain = g_string_new(NULL), once = g_string_new(NULL), text = g_string_new(NULL);
  for (const char *p = layout; *p != '\0'; p++)
    if (*p != ',')
      g_string_append_c(plain, *p);
  if (!unroll(plain->str, true, once) || !unroll(once->str, false, text))
    return pn__rule_broken(v, PN_RULE_PP_LAYOUT, LAYOUT_PTR, "unrolls to more than %d characters", UNROLL_MAX);
  int64_t stage = 0, layers = 0;
  for (const char *p = text->str; *p != '\0'; p++) {
    if (*p == '|') {
      stage++;
    } else if (strchr("ELtm", *p) == NULL) {
      char what[16];
      if (g_ascii_isprint(*p))
        g_snprintf(what, sizeof what, "'%c'", *p);
      else
        g_snprintf(what, sizeof what, "byte 0x%02x", (unsigned char)*p);
      return pn__rule_broken(v, PN_RULE_PP_LAYOUT, LAYOUT_PTR,
                             "invalid layer character %s in virtual stage " I64
                             " (known: E embedding, L loss, t decoder layer, m MTP layer; '|' between stages, x*N and "
                             "(...)*N repeat, ',' is cosmetic)",
                             what, stage);
    } else {
      layers++;
    }
  }
  if (layers == 0)
    return pn__rule_broken(v, PN_RULE_PP_LAYOUT, LAYOUT_PTR, "holds no layer (the first must be the embedding 'E')");
  if (text->len >= out_size)
    return pn__rule_broken(v, PN_RULE_PP_LAYOUT, LAYOUT_PTR,
                           "is %" G_GSIZE_FORMAT " characters written out, at most %" G_GSIZE_FORMAT " are read",
                           text->len, out_size - 1);
  memcpy(out, text->str, text->len + 1);
  return PN_RULE_OK;
}

/* One virtual stage's letters with each run of three or more as "x*N". */
static void compact_stage(GString *out, const char *stage)
{
  for (const char *p = stage; *p != '\0';) {
    gsize run = 1;
    while (p[run] == *p)
      run++;
    if (run >= 3)
      g_string_append_printf(out, "%c*%" G_GSIZE_FORMAT, *p, run);
    else
      g_string_append_len(out, p, (gssize)run);
    p += run;
  }
}

char *pn_workload_layout_compact(const char *layout)
{
  g_auto(GStrv) stage = g_strsplit(layout, "|", -1);
  guint n             = g_strv_length(stage);
  GString *out        = g_string_new(NULL);
  for (guint i = 0; i < n;) {
    guint same = 1;
    while (i + same < n && strcmp(stage[i + same], stage[i]) == 0)
      same++;
    bool last            = i + same == n;
    guint repeated       = last ? same - 1 : same; /* the last stage has no '|' after it */
    g_autoptr(GString) s = g_string_new(NULL);
    compact_stage(s, stage[i]);
    if (repeated >= 2)
      g_string_append_printf(out, "(%s|)*%u,", s->str, repeated);
    else if (repeated == 1)
      g_string_append_printf(out, "%s|", s->str);
    if (last)
      g_string_append(out, s->str);
    i += same;
  }
  if (out->len > 0 && out->str[out->len - 1] == ',')
    g_string_truncate(out, out->len - 1);
  return g_string_free(out, FALSE);
}

int64_t pn_workload_layout_stages(const char *layout)
{
  if (layout[0] == '\0')
    return 0;
  int64_t n = 1;
  for (const char *p = layout; *p != '\0'; p++)
    n += *p == '|';
  return n;
}

static int64_t count_of(const char *s, char c)
{
  int64_t n = 0;
  for (; *s != '\0'; s++)
    n += *s == c;
  return n;
}

/* Multi-token prediction layers ('m') in a layout that Megatron accepts: penumbra prices
 * model.mtp_num_layers beside the loss, on the last virtual stage (workload/ops.h's head), so a
 * layout may put them there only; Megatron's mtp_standalone (the MTP block in the last chunk of
 * another pipeline rank: multi_token_prediction.py mtp_on_this_rank) is not simulated. This is
 * the one place that decides where a layout's 'm' may sit. */
static PnRule layout_mtp(char **stage, int64_t n_vs, int64_t n_mtp, PnRuleViolation *v)
{
  if (count_of(stage[n_vs - 1], 'm') != n_mtp)
    return pn__rule_broken(
        v, PN_RULE_PP_LAYOUT, LAYOUT_PTR,
        "MTP layers ('m') outside the last virtual stage (Megatron's mtp_standalone) are not simulated: "
        "put them beside the loss 'L'");
  return PN_RULE_OK;
}

/* PipelineParallelLayerLayout.__init__ and validate_layer_layout, in their order; the layout is
 * in normal form. */
static PnRule layout_split(const PnScenario *sc, int64_t pp, int64_t vpp, GArray *layers, PnRuleViolation *v)
{
  const char *layout = sc->parallel.pipeline_model_parallel_layout;
  int64_t n_vs       = pn_workload_layout_stages(layout);
  if (n_vs % pp != 0)
    return pn__rule_broken(v, PN_RULE_PP_LAYOUT, LAYOUT_PTR,
                           "has " I64 " virtual stages, not a multiple of pipeline_model_parallel_size " I64
                           " (Megatron-Core: the length of pipeline_model_parallel_layout must be divisible by "
                           "pipeline_model_parallel_size)",
                           n_vs, pp);
  /* TransformerConfig.__post_init__: a virtual size given must be the layout's */
  if (vpp > 1 && vpp != n_vs / pp)
    return pn__rule_broken(v, PN_RULE_PP_LAYOUT, "/parallel/virtual_pipeline_model_parallel_size",
                           I64 " conflicts with pipeline_model_parallel_layout's " I64
                               " virtual stages per pipeline rank (" I64 " stages / pipeline_model_parallel_size " I64
                               ")",
                           vpp, n_vs / pp, n_vs, pp);
  vpp = n_vs / pp;

  g_auto(GStrv) stage   = g_strsplit(layout, "|", -1);
  g_autofree char *flat = g_strjoinv("", stage);
  gsize len             = strlen(flat);
  if (len == 0)
    return pn__rule_broken(v, PN_RULE_PP_LAYOUT, LAYOUT_PTR, "holds no layer (the first must be the embedding 'E')");
  if (flat[0] != 'E')
    return pn__rule_broken(v, PN_RULE_PP_LAYOUT, LAYOUT_PTR, "the first layer must be the embedding 'E', got '%c'",
                           flat[0]);
  if (flat[len - 1] != 'L')
    return pn__rule_broken(v, PN_RULE_PP_LAYOUT, LAYOUT_PTR, "the last layer must be the loss 'L', got '%c'",
                           flat[len - 1]);
  if (count_of(flat, 'E') != 1)
    return pn__rule_broken(v, PN_RULE_PP_LAYOUT, LAYOUT_PTR, "the embedding 'E' must be given exactly once, got " I64,
                           count_of(flat, 'E'));
  if (count_of(flat, 'L') != 1)
    return pn__rule_broken(v, PN_RULE_PP_LAYOUT, LAYOUT_PTR, "the loss 'L' must be given exactly once, got " I64,
                           count_of(flat, 'L'));
  if (count_of(flat, 't') != sc->model.num_layers)
    return pn__rule_broken(v, PN_RULE_PP_LAYOUT, LAYOUT_PTR,
                           "holds " I64 " decoder layers 't', the model's num_layers is " I64
                           " (Megatron-Core: they must match)",
                           count_of(flat, 't'), sc->model.num_layers);
  /* count(mtp) == mtp_num_layers, or none when it is None (0 here) */
  int64_t n_mtp = count_of(flat, 'm');
  if (n_mtp != sc->model.mtp_num_layers)
    return pn__rule_broken(v, PN_RULE_PP_LAYOUT, LAYOUT_PTR,
                           "holds " I64 " MTP layers 'm' but model.mtp_num_layers is " I64
                           " (Megatron-Core: the number of mtp layers in the layout must match mtp_num_layers)",
                           n_mtp, sc->model.mtp_num_layers);
  const char *first_mtp = strchr(flat, 'm');
  if (first_mtp != NULL && strchr(first_mtp, 't') != NULL)
    return pn__rule_broken(v, PN_RULE_PP_LAYOUT, LAYOUT_PTR,
                           "decoder layers 't' must be placed before the MTP layers 'm'");
  /* "Currently we restrict that the MTP should be always in the last virtual pipeline stage of
   * that rank", and all of them in one virtual stage */
  for (int64_t rank = 0; rank < pp; rank++) {
    for (int64_t chunk = 0; chunk + 1 < vpp; chunk++)
      if (strchr(stage[chunk * pp + rank], 'm') != NULL)
        return pn__rule_broken(
            v, PN_RULE_PP_LAYOUT, LAYOUT_PTR,
            "MTP layers 'm' must be in the last virtual stage of their pipeline rank, got one in virtual "
            "stage " I64 " (chunk " I64 " of rank " I64 ")",
            chunk * pp + rank, chunk, rank);
    int64_t here = count_of(stage[(vpp - 1) * pp + rank], 'm');
    if (here > 0 && here != sc->model.mtp_num_layers)
      return pn__rule_broken(v, PN_RULE_PP_LAYOUT, LAYOUT_PTR,
                             "all the MTP layers 'm' must be in the same virtual stage");
  }
  PnRule r = layout_mtp(stage, n_vs, n_mtp, v);
  if (r != PN_RULE_OK)
    return r;
  if (layers != NULL) {
    g_array_set_size(layers, (guint)n_vs);
    for (int64_t vs = 0; vs < n_vs; vs++)
      g_array_index(layers, int64_t, vs) = count_of(stage[vs], 't');
  }
  return PN_RULE_OK;
}

/* ---- uneven and even splits ------------------------------------------------------------- */

/* TransformerConfig.__post_init__'s "Uneven PP" checks, then get_num_layers_to_build. */
static PnRule uneven_split(const PnScenario *sc, int64_t pp, int64_t vpp, GArray *layers, PnRuleViolation *v)
{
  const PnParallelConfig *par = &sc->parallel;
  int64_t first = par->num_layers_in_first_pipeline_stage, last = par->num_layers_in_last_pipeline_stage;
  const char *blame = first > 0 ? FIRST_PTR : LAST_PTR;
  int64_t middle = sc->model.num_layers, middle_stages = pp;
  if (first > 0) {
    if (first % vpp != 0)
      return pn__rule_broken(v, PN_RULE_PP_UNEVEN, FIRST_PTR,
                             I64
                             " layers of the first stage are not divisible by virtual_pipeline_model_parallel_size " I64
                             " (Megatron-Core: each chunk of a stage holds as many layers)",
                             first, vpp);
    middle -= first, middle_stages--;
  }
  if (last > 0) {
    if (last % vpp != 0)
      return pn__rule_broken(v, PN_RULE_PP_UNEVEN, LAST_PTR,
                             I64
                             " layers of the last stage are not divisible by virtual_pipeline_model_parallel_size " I64
                             " (Megatron-Core: each chunk of a stage holds as many layers)",
                             last, vpp);
    middle -= last, middle_stages--;
  }
  /* Megatron-Core lets these through and then builds another model than num_layers says: at pp 1
   * the one stage takes num_layers_in_last_pipeline_stage, and more layers than the model has
   * leave a negative rest */
  if (middle_stages < 0)
    return pn__rule_broken(
        v, PN_RULE_PP_UNEVEN, LAST_PTR,
        "set with num_layers_in_first_pipeline_stage at pipeline_model_parallel_size 1, whose one stage is "
        "both: set one of them");
  if (middle < 0)
    return pn__rule_broken(v, PN_RULE_PP_UNEVEN, blame,
                           "the first and last stages' " I64 " layers exceed num_layers " I64,
                           sc->model.num_layers - middle, sc->model.num_layers);
  if ((middle != 0) != (middle_stages != 0))
    return pn__rule_broken(v, PN_RULE_PP_UNEVEN, blame,
                           "leaves " I64 " layers for " I64
                           " middle pipeline stages (Megatron-Core: middle stages and middle layers, both or neither)",
                           middle, middle_stages);
  if (middle_stages > 0 && middle % middle_stages != 0)
    return pn__rule_broken(v, PN_RULE_PP_UNEVEN, blame,
                           "leaves " I64 " layers, not divisible by the " I64 " middle pipeline stages", middle,
                           middle_stages);
  /* get_transformer_layer_offset divides the middle chunks' layers by the middle stages: with
   * vpp and no middle stage (pp 2, both set) every rank but the first fails there */
  if (vpp > 1 && middle_stages == 0 && pp > 1)
    return pn__rule_broken(
        v, PN_RULE_PP_UNEVEN, blame,
        "with num_layers_in_last_pipeline_stage leaves no middle stage at pipeline_model_parallel_size 2, and "
        "Megatron-Core's layer offsets divide by the middle stages when interleaving "
        "(virtual_pipeline_model_parallel_size " I64 ")",
        vpp);
  int64_t per_middle = middle_stages > 0 ? middle / middle_stages : 0;
  if (per_middle % vpp != 0)
    return pn__rule_broken(v, PN_RULE_PP_UNEVEN, blame,
                           "leaves " I64 " layers on each middle pipeline stage, not divisible by "
                           "virtual_pipeline_model_parallel_size " I64,
                           per_middle, vpp);
  if (layers != NULL) {
    g_array_set_size(layers, (guint)(pp * vpp));
    for (int64_t rank = 0; rank < pp; rank++) {
      int64_t n = rank == 0 && first > 0 ? first : rank == pp - 1 && last > 0 ? last : per_middle;
      for (int64_t chunk = 0; chunk < vpp; chunk++)
        g_array_index(layers, int64_t, chunk * pp + rank) = n / vpp;
    }
  }
  return PN_RULE_OK;
}

/* num_layers (+1 for each accounted embedding / loss) over pp, then each stage's over vpp; the
 * accounted embedding and loss take a layer's place in the first and last virtual stage. */
static PnRule even_split(const PnScenario *sc, int64_t pp, int64_t vpp, GArray *layers, PnRuleViolation *v)
{
  const PnParallelConfig *par = &sc->parallel;
  bool emb = par->account_for_embedding_in_pipeline_split, loss = par->account_for_loss_in_pipeline_split;
  int64_t L = sc->model.num_layers, extra = (emb ? 1 : 0) + (loss ? 1 : 0), slots = L + extra;
  char counted[96];
  if (extra == 0)
    g_snprintf(counted, sizeof counted, "num_layers " I64, L);
  else
    g_snprintf(counted, sizeof counted, "num_layers " I64 " + " I64 " (account_for_*_in_pipeline_split)", L, extra);
  if (pp > slots || slots % pp != 0)
    return pn__rule_broken(v, PN_RULE_PP_LAYERS, "/parallel/pipeline_model_parallel_size", I64 " does not divide %s",
                           pp, counted);
  int64_t stage_slots = slots / pp;
  if (vpp > 1 && stage_slots % vpp != 0)
    return pn__rule_broken(v, PN_RULE_VPP_LAYERS, "/parallel/virtual_pipeline_model_parallel_size",
                           I64 " does not divide the " I64
                               " layers of each pipeline stage (%s / pipeline_model_parallel_size " I64 ")",
                           vpp, stage_slots, counted, pp);
  if (layers != NULL) {
    int64_t n_vs = pp * vpp;
    g_array_set_size(layers, (guint)n_vs);
    for (int64_t vs = 0; vs < n_vs; vs++)
      g_array_index(layers, int64_t, vs) =
          slots / n_vs - ((emb && vs == 0) ? 1 : 0) - ((loss && vs == n_vs - 1) ? 1 : 0);
  }
  return PN_RULE_OK;
}

PnRule pn_workload_stage_layers(const PnScenario *sc, int64_t pp, int64_t vpp, GArray *layers, PnRuleViolation *v)
{
  g_assert(sc != NULL && pp >= 1);
  const PnParallelConfig *par = &sc->parallel;
  int64_t first = par->num_layers_in_first_pipeline_stage, last = par->num_layers_in_last_pipeline_stage;
  bool emb = par->account_for_embedding_in_pipeline_split, loss = par->account_for_loss_in_pipeline_split;
  bool uneven = first > 0 || last > 0, layout = par->pipeline_model_parallel_layout[0] != '\0';
  /* TransformerConfig.__post_init__: uneven stages exclude account_for_*, a layout excludes both */
  if (uneven && (emb || loss))
    return pn__rule_broken(v, PN_RULE_PP_SPLIT_ARGS, first > 0 ? FIRST_PTR : LAST_PTR,
                           "cannot be set together with account_for_embedding_in_pipeline_split or "
                           "account_for_loss_in_pipeline_split (Megatron-Core)");
  if (layout && (uneven || emb || loss))
    return pn__rule_broken(v, PN_RULE_PP_SPLIT_ARGS, LAYOUT_PTR,
                           "cannot be set with the other pipeline layout keys (num_layers_in_first_pipeline_stage " I64
                           ", num_layers_in_last_pipeline_stage " I64
                           ", account_for_embedding_in_pipeline_split %s, account_for_loss_in_pipeline_split %s)",
                           first, last, emb ? "true" : "false", loss ? "true" : "false");
  vpp = MAX(vpp, 1);
  if (layout)
    return layout_split(sc, pp, vpp, layers, v);
  if (uneven)
    return uneven_split(sc, pp, vpp, layers, v);
  return even_split(sc, pp, vpp, layers, v);
}

gboolean pn_workload_split_ok(const PnScenario *sc, int64_t pp, int64_t vpp)
{
  return pn_workload_stage_layers(sc, pp, vpp, NULL, NULL) == PN_RULE_OK;
}

/* ---- choosing a split ------------------------------------------------------------------- */

gboolean pn_workload_split_stated(const PnParallelConfig *par)
{
  return par->pipeline_model_parallel_layout[0] != '\0' || par->num_layers_in_first_pipeline_stage > 0 ||
         par->num_layers_in_last_pipeline_stage > 0 || par->account_for_embedding_in_pipeline_split ||
         par->account_for_loss_in_pipeline_split;
}

void pn_workload_split_keys_set(PnParallelConfig *par, const PnSplitKeys *keys)
{
  par->account_for_embedding_in_pipeline_split = keys->account_for_embedding_in_pipeline_split;
  par->account_for_loss_in_pipeline_split      = keys->account_for_loss_in_pipeline_split;
  par->num_layers_in_first_pipeline_stage      = keys->num_layers_in_first_pipeline_stage;
  par->num_layers_in_last_pipeline_stage       = keys->num_layers_in_last_pipeline_stage;
  g_strlcpy(par->pipeline_model_parallel_layout, keys->pipeline_model_parallel_layout,
            sizeof par->pipeline_model_parallel_layout);
}

/* The uneven split of split.h's rule 3: the middle stages' m, the first stage as full as m allows,
 * the last the rest; a stage of m layers is left unset. FALSE when the ends cannot hold a multiple
 * of vpp each (Megatron-Core's checks are pn_workload_stage_layers', not repeated here). */
static gboolean uneven_choice(int64_t layers, int64_t pp, int64_t vpp, PnSplitKeys *keys)
{
  int64_t m    = vpp * ((layers + pp * vpp - 1) / (pp * vpp)); /* the least multiple of vpp with pp * m >= layers */
  int64_t ends = layers - (pp - 2) * m;                        /* at most 2 m, as pp * m >= layers */
  if (ends < 2 * vpp || ends % vpp != 0)
    return FALSE;
  int64_t first = MIN(m, ends - vpp), last = ends - first;
  *keys = (PnSplitKeys){.num_layers_in_first_pipeline_stage = first == m ? 0 : first,
                        .num_layers_in_last_pipeline_stage  = last == m ? 0 : last};
  return TRUE;
}

/* The layout of split.h's rule 4: rule 3 over the pp * vpp virtual stages, written out. FALSE when
 * the middle stages alone would hold more than num_layers, or the layout does not fit its buffer
 * (Megatron-Core's checks are pn_workload_stage_layers'). */
static gboolean layout_choice(const PnScenario *sc, int64_t pp, int64_t vpp, PnSplitKeys *keys)
{
  int64_t layers = sc->model.num_layers, stages = pp * vpp;
  int64_t n    = (layers + stages - 1) / stages;
  int64_t ends = layers - (stages - 2) * n;
  if (stages < 2 || ends < 0 || layers + stages + sc->model.mtp_num_layers + 2 >= PN_LAYOUT_MAX)
    return FALSE;
  int64_t first = MIN(n, ends), last = ends - first;
  char *p = keys->pipeline_model_parallel_layout;
  *p++    = 'E';
  for (int64_t vs = 0; vs < stages; vs++) {
    int64_t t = vs == 0 ? first : vs == stages - 1 ? last : n;
    if (vs > 0)
      *p++ = '|';
    for (int64_t i = 0; i < t; i++)
      *p++ = 't';
  }
  for (int64_t i = 0; i < sc->model.mtp_num_layers; i++)
    *p++ = 'm';
  *p++ = 'L';
  *p   = '\0';
  return TRUE;
}

PnSplitKeys pn_workload_split_keys_of(const PnParallelConfig *par)
{
  PnSplitKeys k = {.account_for_embedding_in_pipeline_split = par->account_for_embedding_in_pipeline_split,
                   .account_for_loss_in_pipeline_split      = par->account_for_loss_in_pipeline_split,
                   .num_layers_in_first_pipeline_stage      = par->num_layers_in_first_pipeline_stage,
                   .num_layers_in_last_pipeline_stage       = par->num_layers_in_last_pipeline_stage};
  g_strlcpy(k.pipeline_model_parallel_layout, par->pipeline_model_parallel_layout,
            sizeof k.pipeline_model_parallel_layout);
  return k;
}

gboolean pn_workload_split_choose(const PnScenario *sc, int64_t pp, int64_t vpp, PnSplitKeys *keys)
{
  g_assert(sc != NULL && pp >= 1);
  PnSplitKeys none = {0};
  if (pn_workload_split_stated(&sc->parallel)) {
    gboolean ok = pn_workload_split_ok(sc, pp, vpp);
    if (keys != NULL)
      *keys = ok ? pn_workload_split_keys_of(&sc->parallel) : none;
    return ok;
  }
  vpp                   = MAX(vpp, 1);
  int64_t layers        = sc->model.num_layers;
  PnSplitKeys choice[4] = {
      none, {.account_for_embedding_in_pipeline_split = true, .account_for_loss_in_pipeline_split = true}};
  bool offered[4] = {true, pp > 1, pp > 1 && uneven_choice(layers, pp, vpp, &choice[2]),
                     pp > 1 && layout_choice(sc, pp, vpp, &choice[3])};
  PnScenario t    = *sc;
  for (int i = 0; i < 4; i++) {
    if (!offered[i])
      continue;
    pn_workload_split_keys_set(&t.parallel, &choice[i]);
    if (pn_workload_split_ok(&t, pp, vpp)) {
      if (keys != NULL)
        *keys = choice[i];
      return TRUE;
    }
  }
  if (keys != NULL)
    *keys = none;
  return FALSE;
}

void pn_workload_split_describe(GString *s, const PnSplitKeys *k, bool as_keys)
{
  if (k->num_layers_in_first_pipeline_stage > 0)
    g_string_append_printf(s, " %s=" I64, as_keys ? "num_layers_in_first_pipeline_stage" : "first_stage",
                           k->num_layers_in_first_pipeline_stage);
  if (k->num_layers_in_last_pipeline_stage > 0)
    g_string_append_printf(s, " %s=" I64, as_keys ? "num_layers_in_last_pipeline_stage" : "last_stage",
                           k->num_layers_in_last_pipeline_stage);
  bool emb = k->account_for_embedding_in_pipeline_split, loss = k->account_for_loss_in_pipeline_split;
  if (as_keys)
    g_string_append_printf(s, "%s%s", emb ? " account_for_embedding_in_pipeline_split=true" : "",
                           loss ? " account_for_loss_in_pipeline_split=true" : "");
  else if (emb || loss)
    g_string_append_printf(s, " account_for=%s", emb && loss ? "embedding,loss" : emb ? "embedding" : "loss");
  if (k->pipeline_model_parallel_layout[0] != '\0') {
    g_autofree char *layout = pn_workload_layout_compact(k->pipeline_model_parallel_layout);
    g_string_append_printf(s, as_keys ? " pipeline_model_parallel_layout=\"%s\"" : " layout=%s", layout);
  }
}
