# Predicted vs published step time, from `penumbra validate --plot-data plots/validation.dat`,
# and predicted vs measured on our 2-GPU runs (plots/e2e.dat) and 4- / 8-GPU runs (plots/e2e-8gpu.dat;
# its TP=4/8 rows are host-bound, README "Our runs"), each line: measured predicted label.
# Usage: gnuplot plots/validation.gp   (writes plots/validation.png)
set terminal pngcairo size 900,800 font ",10" noenhanced
set output 'plots/validation.png'
set title "penumbra: predicted vs measured step time (s)"
set logscale xy
set xlabel "measured (published) step time, s"; set ylabel "predicted step time, s"
set key top left
set grid
plot 'plots/validation.dat' using 1:2 with points pt 7 ps 1 title "published H100 runs (penumbra validate)", \
     'plots/e2e.dat' using 1:2 with points pt 5 ps 1.2 title "our 2 x H200 runs (microbench/e2e)", \
     'plots/e2e-8gpu.dat' using 1:2 with points pt 9 ps 1.2 title "our runs on the 8 x H200 machine (TP 4/8 host-bound)", \
     x with lines lc rgb "black" title "y = x", 1.1*x with lines dt 2 lc rgb "gray" title "+-10%", 0.9*x with lines dt 2 lc rgb "gray" notitle
