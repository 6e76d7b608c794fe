# Calibration report: measured vs fitted, from `penumbra calibrate --check --plot-data`.
# Usage (from the repository root):
#   build/penumbra calibrate --check --profile hwprofiles/h200-sxm.json hwprofiles/calibration/h200-sxm/*.json \
#       --plot-data plots/calibration-h200.dat
#   gnuplot -e "dat='plots/calibration-h200.dat'; out='plots/calibration-h200.png'; gpu='H200'" plots/calibration.gp
if (!exists("dat")) dat = 'plots/calibration-h200.dat'
if (!exists("out")) out = 'plots/calibration-h200.png'
if (!exists("gpu")) gpu = 'H200'
set terminal pngcairo size 1500,1000 font ",10" noenhanced
set output out
set multiplot layout 2,2 title sprintf("penumbra calibration (%s): measured vs fitted", gpu)

set title "GEMM throughput: measured vs interpolated from the other points (leave-one-out)"
set xlabel "measured TFLOP/s"; set ylabel "predicted TFLOP/s"
set key top left
plot dat index 0 using 2:3 with points pt 7 ps 0.3 title "bf16", \
     dat index 1 using 2:3 with points pt 7 ps 0.3 title "fp8", x with lines lc rgb "black" title "y = x"

set title "NCCL bus bandwidth vs size, default channels (one line per group size: 2, 4, 8 GPUs)"
set logscale x 2; set xlabel "bytes"; set ylabel "busbw (GB/s)"
set key top left
plot for [i=2:6] dat index i using 1:2 with points pt 7 ps 0.6 title sprintf("measured %s", word("all_gather reduce_scatter all_reduce all_to_all send_recv", i-1)), \
     for [i=2:6] dat index i using 1:3 with lines title sprintf("model %s", word("all_gather reduce_scatter all_reduce all_to_all send_recv", i-1))
unset logscale x

set title "GEMM slowdown while k SMs are held by another kernel"
set xlabel "SMs held (k)"; set ylabel "slowdown (median over shapes)"
set key top left
plot dat index 7 using 1:2 with points pt 7 title "GEMM launched for all SMs: measured", \
     dat index 7 using 1:3 with lines title "fitted (gemm_sm_scaling)", \
     dat index 8 using 1:2 with points pt 5 title "GEMM limited to the other SMs (set_sm_margin): measured", \
     dat index 8 using 1:3 with lines title "fitted (gemm_sm_limit_scaling)"

set title "GEMM efficiency vs size (measured)"
set logscale x 10; set xlabel "FLOPs"; set ylabel "TFLOP/s"
plot dat index 0 using 1:2 with points pt 7 ps 0.3 title "bf16", dat index 1 using 1:2 with points pt 7 ps 0.3 title "fp8"
unset multiplot
