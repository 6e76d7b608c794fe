# Calibration report: each point of a profile's tables measured vs predicted by the same table
# without it (leave-one-out), from `penumbra calibrate --check --plot-data` (src/calib/loo.c).
# A table replays its own points exactly, so this is the error a shape, size or SM count the
# table lacks gets. Which GPU each panel was measured on comes from the data file's header (the
# result files' env), not from this script.
# Usage (from the repository root; the measurements each committed profile is fitted from):
#   C=hwprofiles/calibration
#   build/penumbra calibrate --check --profile hwprofiles/h100-sxm.json \
#       $C/h100-sxm/{gemm,gemm_moe_experts,gemm_moe_router,gemm_contention,attention,attention_hd,memory}.json \
#       $C/h200-sxm-8gpu/collective.json $C/h200-sxm/copy_engine.json --plot-data plots/calibration-h100.dat
#   build/penumbra calibrate --check --profile hwprofiles/h200-sxm.json \
#       $C/h200-sxm/{gemm,gemm_moe_experts,gemm_moe_router,gemm_contention,attention,attention_hd,memory,copy_engine}.json \
#       $C/h200-sxm-8gpu/collective.json --plot-data plots/calibration-h200.dat
#   for g in h100 h200; do gnuplot -e "dat='plots/calibration-$g.dat'; out='plots/calibration-$g.png'" plots/calibration.gp; done
if (!exists("dat")) dat = 'plots/calibration-h100.dat'
if (!exists("out")) out = 'plots/calibration-h100.png'

# the header lines of the data file: "# profile: ...", "# measured on, <kind>: <GPU>, <n> GPUs, <date>"
meta(key) = system(sprintf("sed -n 's/^# %s: //p' '%s'", key, dat))
where(kind) = strlen(meta("measured on, ".kind)) > 0 ? "measured on ".meta("measured on, ".kind) : "GPU not recorded"
gpu(kind) = (s_ = meta("measured on, ".kind), strstrt(s_, ",") > 0 ? s_[1:strstrt(s_, ",") - 1] : s_)

set terminal pngcairo size 2100,1700 font ",11" noenhanced
set output out
set multiplot title sprintf("penumbra calibrate --check, profile %s\nmeasured vs leave-one-out prediction: each point priced by its table without that point", meta("profile")) font ",15"

# a 3 x 3 grid under the page title; a panel spans the fraction [f0, f1] of its cell's height
T = 0.05; W = 1.0 / 3; H = (1.0 - T) / 3
margins(c, r, f0, f1) = sprintf("set lmargin at screen %g; set rmargin at screen %g; set bmargin at screen %g; set tmargin at screen %g", c * W + 0.05, (c + 1) * W - 0.012, 1 - T - (r + 1) * H + f0 * H, 1 - T - (r + 1) * H + f1 * H)

set grid lc rgb "#dddddd"
set key box opaque samplen 2.5 spacing 1.1 width 1
# colour + point type per series; filled markers and solid lines: measured;
# open markers and dashed lines: leave-one-out prediction
c1 = "#1b9e77"; c2 = "#d95f02"; c3 = "#7570b3"; c4 = "#e7298a"

# ---- GEMM and attention tables: the error of each point, by size ----
set logscale x 10
set xtics ("10 MFLOP" 1e7, "1 GFLOP" 1e9, "100 GFLOP" 1e11, "10 TFLOP" 1e13, "1 PFLOP" 1e15)
set mxtics 10
set ylabel "leave-one-out error of the time, %"
set yrange [-80:80]
set ytics 20
set key top right
eval margins(0, 0, 0.10, 0.86)
set xlabel "FLOPs of the GEMM (log scale)"
set title sprintf("GEMM tables gemm_bf16, gemm_fp8 (cuBLASLt)\n%s", where("gemm"))
plot 0 with lines lc rgb "black" notitle, \
     dat index "gemm_fp8" using 1:4 with points pt 6 ps 0.5 lc rgb c2 title "gemm_fp8 (open circles)", \
     dat index "gemm_bf16" using 1:4 with points pt 7 ps 0.35 lc rgb c1 title "gemm_bf16 (dots)"

eval margins(1, 0, 0.10, 0.86)
set xlabel "FLOPs of the attention kernel (log scale)"
set title sprintf("attention table attn_bf16 (cuDNN fused attention, causal)\n%s", where("attention"))
plot 0 with lines lc rgb "black" notitle, \
     dat index "attn_fwd" using 1:4 with points pt 7 ps 0.8 lc rgb c1 title "forward", \
     dat index "attn_bwd" using 1:4 with points pt 4 ps 0.8 lc rgb c2 title "backward"
unset logscale x
unset mxtics
set autoscale y
set ytics autofreq

# ---- SM-contention curves ----
eval margins(2, 0, 0.10, 0.86)
set xtics autofreq
set xlabel "SMs held by another kernel"
set ylabel "GEMM slowdown (median over the shapes)"
set key bottom right
set title sprintf("SM-contention curves gemm_sm_scaling, gemm_sm_limit_scaling\n%s", where("gemm_contention"))
plot dat index "sm_held" using 1:2 with linespoints pt 7 ps 1.2 lc rgb c1 dt 1 title "GEMM on all SMs: measured", \
     dat index "sm_held" using 1:3 with linespoints pt 6 ps 1.6 lc rgb c1 dt 2 title "leave-one-out", \
     dat index "sm_margin" using 1:2 with linespoints pt 5 ps 1.2 lc rgb c2 dt 1 title "GEMM on the other SMs: measured", \
     dat index "sm_margin" using 1:3 with linespoints pt 4 ps 1.6 lc rgb c2 dt 2 title "leave-one-out"

# ---- memory-bound kernel classes ----
eval margins(0, 1, 0.10, 0.86)
set logscale x 2
set xtics ("64 MiB" 2**26, "128 MiB" 2**27, "256 MiB" 2**28, "512 MiB" 2**29, "1 GiB" 2**30, "2 GiB" 2**31, "4 GiB" 2**32)
set xrange [2**25.7:2**32.3]
set xlabel "bytes moved (read + write)"
set ylabel "bandwidth, GB/s"
set key bottom right maxrows 4
set title sprintf("memory-bound kernel classes mem_bandwidth_*\n%s", where("memory"))
stats dat index "mem_copy" using 2 nooutput
set yrange [STATS_min * 0.7 : *]
plot dat index "mem_copy" using 1:2 with linespoints pt 7 ps 1.2 lc rgb c1 dt 1 title "copy: measured", \
     dat index "mem_norm" using 1:2 with linespoints pt 5 ps 1.2 lc rgb c2 dt 1 title "norm: measured", \
     dat index "mem_activation" using 1:2 with linespoints pt 9 ps 1.3 lc rgb c3 dt 1 title "activation: measured", \
     dat index "mem_optimizer" using 1:2 with linespoints pt 13 ps 1.3 lc rgb c4 dt 1 title "Adam step: measured", \
     dat index "mem_copy" using 1:3 with linespoints pt 6 ps 1.6 lc rgb c1 dt 2 title "leave-one-out", \
     dat index "mem_norm" using 1:3 with linespoints pt 4 ps 1.6 lc rgb c2 dt 2 title "leave-one-out", \
     dat index "mem_activation" using 1:3 with linespoints pt 8 ps 1.7 lc rgb c3 dt 2 title "leave-one-out", \
     dat index "mem_optimizer" using 1:3 with linespoints pt 12 ps 1.7 lc rgb c4 dt 2 title "leave-one-out"
unset xrange
set autoscale y

# ---- NCCL: one cell per collective (bus bandwidth above, leave-one-out error below), one colour per group ----
others = gpu("collective") ne gpu("gemm") && strlen(gpu("gemm")) > 0 ? sprintf("\nnot on the %s: the profile reuses these", gpu("gemm")) : ""
set xrange [2**9.5:2**32.5]
sizes = 'set xtics ("1 KiB" 2**10, "16 KiB" 2**14, "256 KiB" 2**18, "4 MiB" 2**22, "64 MiB" 2**26, "1 GiB" 2**30)'
unlabelled = 'set xtics ("" 2**10, "" 2**14, "" 2**18, "" 2**22, "" 2**26, "" 2**30)'
minor = 'set xtics add ("" 2**12 1, "" 2**16 1, "" 2**20 1, "" 2**24 1, "" 2**28 1, "" 2**32 1)'
cells = "1,1 2,1 0,2 1,2 2,2"
colls = "all_gather reduce_scatter all_reduce all_to_all send_recv"
do for [i = 1:5] {
  coll = word(colls, i); cell = word(cells, i)
  c = int(cell[1:1]); r = int(cell[3:3])
  # bus bandwidth, log scale: measured and leave-one-out
  eval margins(c, r, 0.38, 0.83)
  set logscale y 10
  set yrange [0.03:1000]
  set ytics ("0.1" 0.1, "1" 1, "10" 10, "100" 100, "1000" 1000)
  eval unlabelled; eval minor
  unset xlabel
  set ylabel "bus bandwidth, GB/s"
  set key on bottom right maxrows 3
  set title sprintf("NCCL %s, groups of 2, 4 and 8 GPUs, NCCL's default channels\n%s%s", coll, where("collective"), others)
  plot dat index sprintf("nccl_%s_2gpu", coll) using 1:2 with linespoints pt 7 ps 1.0 lc rgb c1 dt 1 title "2 GPUs: measured", \
       dat index sprintf("nccl_%s_4gpu", coll) using 1:2 with linespoints pt 5 ps 1.0 lc rgb c2 dt 1 title "4 GPUs: measured", \
       dat index sprintf("nccl_%s_8gpu", coll) using 1:2 with linespoints pt 9 ps 1.2 lc rgb c3 dt 1 title "8 GPUs: measured", \
       dat index sprintf("nccl_%s_2gpu", coll) using 1:3 with linespoints pt 6 ps 1.5 lc rgb c1 dt 2 title "leave-one-out", \
       dat index sprintf("nccl_%s_4gpu", coll) using 1:3 with linespoints pt 4 ps 1.5 lc rgb c2 dt 2 title "leave-one-out", \
       dat index sprintf("nccl_%s_8gpu", coll) using 1:3 with linespoints pt 8 ps 1.7 lc rgb c3 dt 2 title "leave-one-out"
  # the leave-one-out error of the time, linear
  eval margins(c, r, 0.10, 0.36)
  unset logscale y
  set yrange [-80:80]
  set ytics 40
  eval sizes; eval minor
  set xlabel "message size (nccl-tests bytes)"
  set ylabel "error, %"
  set key off
  unset title
  plot 0 with lines lc rgb "black" notitle, \
       dat index sprintf("nccl_%s_2gpu", coll) using 1:4 with linespoints pt 6 ps 1.2 lc rgb c1 dt 2 notitle, \
       dat index sprintf("nccl_%s_4gpu", coll) using 1:4 with linespoints pt 4 ps 1.2 lc rgb c2 dt 2 notitle, \
       dat index sprintf("nccl_%s_8gpu", coll) using 1:4 with linespoints pt 8 ps 1.4 lc rgb c3 dt 2 notitle
}
unset multiplot
