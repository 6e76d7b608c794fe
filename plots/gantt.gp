# One simulated iteration as a Gantt chart, from `penumbra run SCENARIO --gantt FILE.svg|png
# [--from MS --to MS | --window GROUP]` (which writes the data and gives this script datafile,
# outfile, ext, title, rows, xfrom and xto). Data sets: 0 the bands behind each stage (light red:
# communication exposed, grey: bubble), 1 the tasks (x0 x1 y0 y1 colour), 2 each stage's
# exposed / bubble row (exposed spans outlined in red), 3 the row names.
nrows = rows + 0
height = 170 + 22 * nrows
if (ext eq "svg") {
  set terminal svg size 1600,height font ",11" noenhanced background rgb "white"
} else {
  set terminal pngcairo size 1600,height font ",10" noenhanced
}
set output outfile
set title title
set xlabel "time (ms)"
set xrange [xfrom + 0 : xto + 0]
set yrange [nrows - 0.5 : -0.5]
set ytics nomirror scale 0
set grid xtics
set key outside bottom center horizontal maxcols 4
set lmargin 26
plot datafile index 0 using (($1+$2)/2):(($3+$4)/2):1:2:3:4:5 with boxxyerror fs solid 1.0 noborder lc rgb variable notitle, \
     '' index 1 using (($1+$2)/2):(($3+$4)/2):1:2:3:4:5 with boxxyerror fs solid 1.0 noborder lc rgb variable notitle, \
     '' index 2 using (($1+$2)/2):(($3+$4)/2):1:2:3:4:5 with boxxyerror fs solid 1.0 noborder lc rgb variable notitle, \
     '' index 2 using ($5 == 12303291 ? NaN : ($1+$2)/2):(($3+$4)/2):1:2:3:4 with boxxyerror fs empty border lw 1.5 lc rgb "#D00000" notitle, \
     '' index 3 using (NaN):1:ytic(2) notitle, \
     NaN with boxes fs solid lc rgb "#4878CF" title "compute", \
     NaN with boxes fs solid lc rgb "#F28E2B" title "TP comm", \
     NaN with boxes fs solid lc rgb "#59A14F" title "DP comm", \
     NaN with boxes fs solid lc rgb "#B07AA1" title "PP send/recv", \
     NaN with boxes fs solid lc rgb "#9C755F" title "CP comm", \
     NaN with boxes fs solid lc rgb "#76B7B2" title "EP comm", \
     NaN with boxes fs solid lc rgb "#FFC8C8" title "exposed communication (band, and outlined red in each stage's last row)", \
     NaN with boxes fs solid lc rgb "#BBBBBB" title "bubble"
