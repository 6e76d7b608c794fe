/* plan.h — capacity planning: how many GPUs, of which kind, for how long and at what cost, to
 * train a model on a number of tokens. Above sweep (sweep.h): for each GPU kind, each planned GPU
 * count and each global batch of the given range, the best layout of the sweep's default space;
 * then the arithmetic of a training run on it.
 *
 * The arithmetic (units in the names; hand-checked in tests/unit/test_plan.c):
 *   time to train   train_s   = tokens / tokens_per_s / goodput   (goodput: the fraction of wall
 *                               time that trains; checkpoints, restarts and failures take the rest)
 *   GPU-hours                 = train_s x gpus / 3600
 *   cost                      = GPU-hours x price per GPU-hour
 *   scaling efficiency        = tokens/s/GPU / tokens/s/GPU at the kind's smallest planned count
 * GPU counts: the powers of two in range that are whole nodes (or divide one), and, per octave,
 * the counts that pipeline sizes with an odd factor need (PP 5 and 10 of Llama 3 70B's 80 layers
 * need a multiple of 5 GPUs): the odd parts of the default pipeline sizes, the three smallest.
 * Global batches: the powers of two of sequences whose tokens lie in the range; never changed.
 * Cost: one sweep per GPU kind, the counts and batches as two more axes of one space, so its
 * rules and memory check and its thread pool are shared; then two simulations per overlap knob
 * of the recommended layout.
 */
#ifndef PN_PLAN_PLAN_H
#define PN_PLAN_PLAN_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "io/report.h"
#include "sweep/sweep.h"

/* ---- arithmetic ---- */
double pn_plan_train_s(double tokens, double tokens_per_s, double goodput);
double pn_plan_gpu_hours(double train_s, int64_t gpus);
double pn_plan_cost(double gpu_hours, double price_per_gpu_hour);
double pn_plan_efficiency(double per_gpu, double per_gpu_at_smallest);

/* The planned GPU counts in [min, max], ascending, and in *why (g_free) which counts were added
 * beside the powers of two and for which pipeline sizes (NULL when none). `pipeline_sizes` has
 * bit p set when Megatron's split takes pipeline size p (p <= 16; workload/split.h). Empty when
 * none. */
GArray *pn_plan_gpu_counts(int64_t min, int64_t max, int gpus_per_node, uint32_t pipeline_sizes, char **why);
/* The global batches, in sequences of `seq` tokens: powers of two with tokens in [min, max]. */
GArray *pn_plan_batches(double tokens_min, double tokens_max, int64_t seq);

/* ---- a plan ---- */
typedef struct {
  char *profile;
  double price; /* per GPU-hour; NaN when not given */
} PnPlanKind;

typedef struct {
  const char *model, *precision;
  double tokens;
  GArray *kinds; /* of PnPlanKind, borrowed */
  int64_t gpus_min, gpus_max, seq_length;
  double batch_tokens_min, batch_tokens_max;
  double deadline_s, budget; /* NaN: not given */
  double goodput;            /* (0, 1] */
  int threads;
  /* Simulate every layout. Otherwise only those a lower bound on their iteration time cannot rule
   * out of coming within penumbra's error of their point's best (sweep.h, Pruning): the plans,
   * the best layouts and those within the error are the same, the layouts beyond it are not
   * simulated. */
  bool exhaustive;
  volatile gint *cancel;
} PnPlanSpec;

/* One GPU kind, GPU count and global batch, with the best layout the sweep found for it. */
typedef struct {
  guint kind;
  int64_t gpus, batch;    /* batch in sequences */
  PnSweepResult *layouts; /* this point's simulated layouts, ranked (owned); when pruning, those within the margin */
  guint checked;          /* its layouts accepted by the rules and the memory check */
  guint simulated;        /* ... of which simulated: the others were ruled out by their bound */
  bool feasible;          /* a layout was simulated without failing */
  bool chosen;            /* the best batch of its (kind, gpus): the plan for that count */
  guint within;           /* layouts within penumbra's error of the best, the best included */
  double tokens_per_s, train_s, gpu_hours, cost, efficiency;
} PnPlanPoint;

typedef struct {
  PnScenario *base;
  PnSweepSpec sweep;
  PnSweepResult *result;
  guint axis_gpus, axis_batch;
} PnPlanSweep;

typedef struct {
  const PnPlanSpec *spec;
  GArray *counts, *batches; /* of int64_t */
  char *counts_why;
  GPtrArray *sweeps; /* of PnPlanSweep*, one per kind */
  GArray *points;    /* of PnPlanPoint, by kind, count, batch */
  double error_pct;  /* penumbra's measured step-time error for the family (NaN: none) */
  int error_n;
  char *error_family;
  bool priced;                          /* every kind has a price: plans compare by cost, else by GPU-hours */
  int cheapest, fastest;                /* points: cheapest meeting the deadline, fastest within the budget (-1) */
  int closest_deadline, closest_budget; /* when unmet: the point that comes closest (-1) */
  int recommended;                      /* the point whose layout the what-if and the figures show */
  GArray *knobs;                        /* PnWhatIfKnob of the recommended layout (io/report.h) */
  bool interrupted;
} PnPlanResult;

typedef struct {
  gint phase; /* 0 checking, 1 simulating, 2 what-if */
  gint kind;
  PnSweepProgress sweep;
} PnPlanProgress;

void pn_plan_result_free(PnPlanResult *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PnPlanResult, pn_plan_result_free)

/* The bases (one scenario per kind), counts, batches and spaces. Errors: an unknown model or
 * profile, no count or no batch in range (PN_IO_ERROR_INVALID, naming the option). */
PnPlanResult *pn_plan_prepare(const PnPlanSpec *spec, GError **error);
/* The sweeps, the points and their arithmetic, the choices, and the what-if of the recommended
 * layout. FALSE with `error` when no layout can run at all or a simulation fails internally. */
gboolean pn_plan_evaluate(PnPlanResult *r, PnPlanProgress *progress, GError **error);
/* The point's best layout. */
const PnSweepRow *pn_plan_best(const PnPlanPoint *p);
/* Whether the deadline and the budget (those given) are met. */
bool pn_plan_met(const PnPlanResult *r);

#endif
