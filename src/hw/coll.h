/* coll.h — NCCL collectives as latency plus wire bytes on the links of the span a group covers.
 *
 * What it models: a collective over a group of n ranks with k ranks per node (nodes = n / k),
 * on one simulated GPU (the others of the group are symmetric). Sizes follow nccl-tests: S is
 * the whole buffer (all-gather output, reduce-scatter input, all-reduce buffer, all-to-all
 * buffer per rank). Per GPU and direction, a ring moves S(n-1)/n bytes for AG/RS and twice that
 * for AR; when the group spans nodes, NCCL's rings cross each node once per channel and the
 * rails spread the crossings over the node's k NICs, so NVLink carries (k-1)/k of the ring
 * bytes and the NIC 1/k (bus bandwidth = min(NVLink, k * NIC), reference §5.4). All-to-all
 * sends S/n to each peer: (k-1)/n of S over NVLink, (n-k)/n over the NIC.
 * Latency: NCCL's base latency plus per-hop latency along the ring, or along a tree / PAT
 * (2 log2(nodes) network hops) when that is shorter, as NCCL's tuner would choose.
 * The bandwidth a collective can drive is also bounded by its channels: ctas * cta_bandwidth,
 * and by the protocol efficiency at small sizes (profile coll_size_efficiency).
 * Measured instead: a group inside one node whose size the profile's nccl_table covers (2, 4, 8
 * GPUs measured, or between two measured sizes) takes its latency and rate from the table, so
 * the formulas above serve groups across nodes and sizes outside the measured ones.
 */
#ifndef PN_HW_COLL_H
#define PN_HW_COLL_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "hw/profile.h"

typedef enum {
  PN_COLL_ALL_GATHER,
  PN_COLL_REDUCE_SCATTER,
  PN_COLL_ALL_REDUCE,
  PN_COLL_ALL_TO_ALL,
  PN_COLL_SEND_RECV,
} PnCollKind;

typedef struct {
  PnCollKind kind;
  double bytes;           /* S, nccl-tests convention */
  int64_t ranks;          /* n */
  int64_t ranks_per_node; /* k (<= gpus_per_node) */
  int min_ctas, max_ctas; /* NCCL_MIN_CTAS / NCCL_MAX_CTAS, 0 = unset */
} PnCollSpec;

typedef struct {
  double latency_ns;
  double nvlink_bytes; /* per GPU per direction */
  double nic_bytes;
  double max_bytes_per_ns; /* bound on the dominant resource's rate, 0 = none */
  int sms;                 /* CTAs = SMs held */
} PnCollCost;

void pn_coll_cost(const PnHwProfile *hw, const PnCollSpec *spec, PnCollCost *out);
/* Time alone on idle links: latency + dominant bytes / min(bound, link). For reports and tests. */
double pn_coll_time_alone_ns(const PnHwProfile *hw, const PnCollCost *c);
const char *pn_coll_kind_name(PnCollKind k);
/* nccl-tests' bus-bandwidth factor: busbw = algbw x factor, algbw = S / time; all-reduce
 * 2(n-1)/n, all-gather, reduce-scatter and all-to-all (n-1)/n, send/recv 1. */
double pn_coll_busbw_factor(PnCollKind k, int64_t ranks);

#endif
