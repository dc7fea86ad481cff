# metrics.gp — the dashboard's series (k8s/grafana/lmscore.json) computed from
# a scrape of lmscored's /metrics every second, from bench/metrics/run.sh:
#   gnuplot -e "csv='metrics.csv'; png='metrics.png'" metrics.gp
set datafile separator comma
set datafile missing "nan"
set terminal pngcairo size 1100,1100 noenhanced font ",10"
set output png
set key autotitle columnhead outside right top
set grid
set lmargin 10
set rmargin 36
set xrange [0:*]
set autoscale xfixmax
set multiplot layout 4,1 title "lmscored on tiny-qwen3 scraped every 1 s: 8 clients (prefill_extend), 32, then 64 clients (auto) call Score; queue depth 32"
set ylabel "items/s"
set y2label "calls in flight" offset -1
set y2tics
set ytics nomirror
plot csv using 1:2 with lines lw 2 title "items/s", \
     csv using 1:12 axes x1y2 with steps lw 1 title "calls in flight"
unset y2label
unset y2tics
set ytics mirror
set ylabel "ms (log scale)"
set logscale y
plot for [c=4:9] csv using 1:c with linespoints pt 7 ps 0.4
unset logscale y
set ylabel "errors/s"
plot csv using 1:10 with lines lw 2 title "errors/s (all queue_full here)"
set ylabel "items per call / ratio"
set xlabel "seconds"
set yrange [0:*]
plot csv using 1:3 with lines lw 2 title "items per call", \
     csv using 1:11 with points pt 7 ps 0.5 title "prefix-cache hit ratio"
unset multiplot
