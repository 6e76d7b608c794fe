/* plan.c — names of the userbuffers slots (see plan.h). */
#include "sched/plan.h"

#include <string.h>

static const char *const slot_names[PN_UB_N] = {"qkv_fprop",  "proj_fprop", "fc1_fprop",  "fc2_fprop",
                                                "qkv_dgrad",  "qkv_wgrad",  "fc1_dgrad",  "fc1_wgrad",
                                                "proj_dgrad", "fc2_dgrad",  "proj_wgrad", "fc2_wgrad"};

const char *pn_ub_slot_name(PnUbSlot s) { return (unsigned)s < PN_UB_N ? slot_names[s] : "?"; }

int pn_ub_slot_from_name(const char *name)
{
  if (!name)
    return -1;
  for (int i = 0; i < PN_UB_N; i++)
    if (strcmp(name, slot_names[i]) == 0)
      return i;
  return -1;
}
