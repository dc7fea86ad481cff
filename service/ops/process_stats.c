/*
 * process_stats.c — the process's own figures (see process_stats.h), where
 * the Prometheus client libraries take them: CPU time from getrusage,
 * virtual and resident size and the start time from /proc/self/stat (the
 * start in clock ticks after boot, plus the boot time of /proc/stat), the
 * open descriptors by listing /proc/self/fd, the limit from getrlimit.
 */
#include "process_stats.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cgroup.h"

/* /proc/self/stat's fields after the command name: field 3 (state) on. */
typedef struct {
    unsigned long long start_ticks; /* field 22 */
    unsigned long long vsize;       /* field 23, bytes */
    long long rss_pages;            /* field 24 */
} proc_stat;

static bool read_proc_stat(proc_stat *out)
{
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    if (!f) return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* the command name (field 2) is in parentheses and may hold spaces or
     * parentheses itself: the fields resume after the last ')' */
    const char *rest = strrchr(buf, ')');
    if (!rest) return false;
    return sscanf(rest + 1,
                  "%*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
                  "%llu %llu %lld",
                  &out->start_ticks, &out->vsize, &out->rss_pages) == 3;
}

/* The boot time, seconds since the epoch, from /proc/stat's btime; 0 when
 * unknown. It does not change while the system runs: read once. */
static long long g_boot_time;
static pthread_once_t g_boot_time_once = PTHREAD_ONCE_INIT;

static void read_boot_time(void)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return;
    char line[256];
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "btime %lld", &g_boot_time) == 1) break;
    fclose(f);
}

/* Entries of /proc/self/fd but the one listing them; -1 when unreadable. */
static int64_t open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    int64_t n = 0;
    char own[16];
    snprintf(own, sizeof own, "%d", dirfd(d));
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.' && strcmp(e->d_name, own) != 0) n++;
    closedir(d);
    return n;
}

bool process_stats_read(process_stats *out)
{
    proc_stat st;
    if (!read_proc_stat(&st)) return false;
    pthread_once(&g_boot_time_once, read_boot_time);
    long ticks_per_second = sysconf(_SC_CLK_TCK);
    if (ticks_per_second <= 0) return false;

    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return false;
    out->cpu_seconds = (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
                       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
    out->start_time_seconds = (double)g_boot_time + (double)st.start_ticks / ticks_per_second;
    out->open_fds = open_fds();
    struct rlimit nofile;
    out->max_fds = getrlimit(RLIMIT_NOFILE, &nofile) == 0 ? (int64_t)nofile.rlim_cur : -1;
    out->virtual_memory_bytes = (int64_t)st.vsize;
    out->resident_memory_bytes = (int64_t)st.rss_pages * sysconf(_SC_PAGESIZE);
    out->memory_limit_bytes = cgroup_memory_limit();
    return true;
}
