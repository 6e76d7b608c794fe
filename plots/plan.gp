# The figures of `penumbra plan`'s report (src/plan/figures.c gives this script datafile, outfile,
# ext, and its own variables):
#   fig     time | cost | tflops | efficiency | memory: a line per GPU kind against the GPU count,
#           from plans.dat (one block per kind: gpus train_days spend tflops_per_gpu efficiency
#           memory_gib hbm_gib); breakdown: a stacked bar per plan from breakdown.dat (plan,
#           then the percent of the iteration in compute, bubble, exposed DP TP PP CP EP, other)
#   kinds   the GPU kinds, in the blocks' order, separated by spaces
#   xtics   the planned GPU counts, separated by commas
#   spend   the cost figure's unit: "cost" or "GPU-hours"
if (ext eq "svg") {
  set terminal svg size 760,440 dynamic font "sans,12" noenhanced background rgb "white"
} else {
  set terminal pngcairo size 760,440 font "sans,10" noenhanced
}
set output outfile
set grid

if (fig eq "breakdown") {
  set title "Where the iteration goes"
  set style data histogram
  set style histogram rowstacked
  set style fill solid 0.8 border -1
  set boxwidth 0.75
  set ylabel "percent of the iteration"
  set yrange [0:100]
  set xtics rotate by -45
  set key outside right
  plot datafile using 2:xtic(1) title "compute", "" using 3 title "bubble", "" using 4 title "exposed DP", \
       "" using 5 title "exposed TP", "" using 6 title "exposed PP", "" using 7 title "exposed CP", \
       "" using 8 title "exposed EP", "" using 9 title "other"
  exit
}

nk = words(kinds)
set logscale x 2
set xlabel "GPUs"
eval "set xtics (" . xtics . ")"
stats datafile using 1 nooutput
set xrange [STATS_min / 1.25 : STATS_max * 1.25]
set key outside right top vertical
col = (fig eq "time") ? 2 : (fig eq "cost") ? 3 : (fig eq "tflops") ? 4 : (fig eq "efficiency") ? 5 : 6
if (fig eq "time") { set title "Time to train"; set ylabel "days"; set yrange [0:*] }
if (fig eq "cost") { set title "Cost of the run"; set ylabel spend; set yrange [0:*] }
if (fig eq "tflops") { set title "Throughput per GPU"; set ylabel "model TFLOP/s per GPU"; set yrange [0:*] }
if (fig eq "efficiency") {
  set title "Scaling efficiency"
  set ylabel "tokens/s per GPU relative to the smallest count"
  set yrange [0:1.1]
}
if (fig eq "memory") {
  set title "Memory per GPU against HBM"
  set ylabel "GiB per GPU"
  set yrange [0:*]
  plot for [k=1:nk] datafile index (k - 1) using 1:6 with linespoints lw 2 pt 7 lc k title word(kinds, k), \
       for [k=1:nk] datafile index (k - 1) using 1:7 with lines dt 2 lw 1 lc k title word(kinds, k) . " HBM"
  exit
}
plot for [k=1:nk] datafile index (k - 1) using 1:col with linespoints lw 2 pt 7 lc k title word(kinds, k)
