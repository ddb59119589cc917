# Chart for bench_methods.sh: median seconds of the solved runs (whole process)
# and success rate, against N, one line per method.
#   gnuplot -e "csv='methods.csv'; out='methods.svg'; methods='qs4 hillclimb ...'" methods.gp
set terminal svg size 1000,420 dynamic noenhanced font "sans,11"
set output out
set datafile separator ","
set datafile missing "nan"
# one method's rows (the CSV interleaves methods, which would break the lines)
rows(m) = sprintf("< awk -F, '$1 == \"%s\"' '%s'", m, csv)
set multiplot layout 1,2 title "nq seed methods (whole process, median over seeds)"

set logscale xy
set format x "1e%T"
set format y "1e%T"
set xlabel "N"
set ylabel "median seconds (solved runs)"
set grid
set key top left
plot for [m in methods] rows(m) using 2:10 with linespoints title m

set format y "%g"
unset logscale y
set yrange [0:1.05]
set ylabel "success rate"
set key bottom left
plot for [m in methods] rows(m) using 2:8 with linespoints title m

unset multiplot
