# SPDX-License-Identifier: GPL-2.0
# The timeline of a VM moved from host A to host B without its memory,
# drawn from rpage-vm-move.dat: what B recorded in a real run of the
# move (selftests/guest/vmmove.sh), turned into data by
# selftests/rpage_timeline.py. Rendered into the admin guide by
# Documentation/sphinx/rpage_gnuplot.py; gnuplot writes SVG on its
# standard output. Each sample holds until the next one (steps): what
# happened in between, B did not see.
set terminal svg size 820,480 dynamic font "sans,12"
set output
data = "rpage-vm-move.dat"
stats data index 0 using 1 nooutput
tmax = STATS_max
stats data index 0 using 2 nooutput
ymax = STATS_max
set xrange [-0.5:tmax * 1.02]
# Steps after the last sample (A letting go) are left out.
set yrange [0:ymax * 1.25]
set xlabel "seconds since A's VM stopped"
set ylabel "guest RAM (MiB)"
set key outside bottom center horizontal
set grid ytics
# Each step: a dashed line, and its name beside it, turned up.
plot data index 1 using 1:(0):(0):(ymax * 1.25) with vectors nohead dt 2 lc "gray50" notitle, \
     data index 1 using 1:(ymax * 1.02):2 with labels rotate by 90 left offset -0.8,0 font "sans,10" notitle, \
     data index 0 using 1:2 with steps lw 3 lc "web-blue" title "on B", \
     data index 0 using 1:3 with steps lw 2 lc "dark-orange" title "read by the VM's faults", \
     data index 0 using 1:4 with steps lw 2 lc "forest-green" title "read by the pull"
