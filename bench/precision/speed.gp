# speed.gp — items/s per precision and tier on each
# workload (log scale), from the precision benchmark's precision_speed.csv:
#   gnuplot -e "csv='precision_speed.csv'; png='precision_speed.png'" speed.gp
set datafile separator comma
set terminal pngcairo size 1100,600 noenhanced font ",11"
set output png
set title "lmscore engine, qwen3-0.6b geometry: items/s by precision (higher is better)"
set ylabel "items/s (log scale)"
set logscale y
set grid ytics mytics
set key outside below horizontal maxrows 2
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set bmargin 7
plot for [i=2:*] csv using i:xticlabels(1) title columnheader(i)
