# The predicted TFLOP/s per GPU of each scenario of a regression suite, run after run, from
# `penumbra regress --history [--scenario NAME] --plot trend.svg|png` (which writes the data and
# gives this script datafile, outfile, ext and title). One line per scenario; a filled circle
# where the simulator changed (another penumbra commit than the scenario's run before), an open
# square where the scenario changed (another scenario file hash). x: the history's run number,
# labelled with the commit of the run.
if (ext eq "svg") {
  set terminal svg size 1000,600 font ",11" noenhanced background rgb "white"
} else {
  set terminal pngcairo size 1000,600 font ",10" noenhanced
}
set output outfile
set title "penumbra regress: predicted model TFLOP/s per GPU over runs (" . title . ")"
set xlabel "run (commit of the penumbra that predicted it)"
set ylabel "model TFLOP/s per GPU"
set key outside right top
set grid
set xtics rotate by -30
set offsets 0.3, 0.3, 0, 0
stats datafile using 1 nooutput
n = STATS_blocks
plot for [i=0:n-1] datafile index i using 1:2:xtic(5) with linespoints lw 2 pt 7 ps 0.6 title columnheader(6), \
     for [i=0:n-1] datafile index i using 1:($3 > 0 ? $2 : 1/0) with points pt 7 ps 2.0 lc rgb "black" \
       title (i == 0 ? "simulator changed" : ""), \
     for [i=0:n-1] datafile index i using 1:($4 > 0 ? $2 : 1/0) with points pt 4 ps 2.6 lw 2 lc rgb "red" \
       title (i == 0 ? "scenario changed" : "")
