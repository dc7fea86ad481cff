# multi_item.gp — items/s per algorithm per workload (log scale) from the
# engine benchmark's multi_item.csv:
#   gnuplot -e "csv='multi_item.csv'; png='multi_item.png'" multi_item.gp
# Cold runs only (a fresh query each); refused or stopped runs are marked.
set datafile separator comma
set terminal pngcairo size 1100,600 noenhanced font ",11"
set output png
set title "lmscore engine, qwen3-0.6b geometry: multi-item throughput (cold, higher is better)"
set ylabel "items/s (log scale)"
set logscale y
set grid ytics mytics
set key outside right top
set style fill solid 0.85 border -1
set boxwidth 0.15
set bmargin 5

algorithms = "serial packed_dense packed_segment prefill_extend auto"
colors = "#777777 #e6a700 #1f77b4 #2ca02c #d62728"
n = words(algorithms)
offset(i) = (i - (n + 1) / 2.0) * 0.16

# Rows of algorithm `a` give their x (workload index + the algorithm's slot).
x(i) = column(2) + offset(i)
is(a) = strcol(7) eq a
not_run(i) = is(word(algorithms, i)) && strcol(8) ne "ok"

stats csv using 13 skip 1 nooutput
ymark = STATS_min / 2
stats csv using 2 skip 1 nooutput
set xrange [-0.6:STATS_max + 0.6]
set yrange [ymark / 2:*]

plot for [i=1:n] csv skip 1 using (x(i)):(is(word(algorithms, i)) && strcol(8) eq "ok" ? \
         column(13) : NaN) with boxes lc rgb word(colors, i) title word(algorithms, i), \
     for [i=1:n] csv skip 1 using (x(i)):(not_run(i) ? ymark : NaN):(strcol(8)) \
         with labels rotate by 90 left font ",9" notitle, \
     for [i=1:n] csv skip 1 using (x(i)):(is(word(algorithms, i)) && strcol(8) eq "ok" ? \
         column(13) : NaN):(sprintf("%.3g", column(13))) with labels offset 0,0.6 font ",8" \
         notitle, \
     csv skip 1 using 2:(NaN):xticlabels(3) notitle
