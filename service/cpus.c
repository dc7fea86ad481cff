/*
 * cpus.c — the CPUs this process may use (see cpus.h).
 *
 * A quota applies to a cgroup and everything below it, so the process's own
 * cgroup and each of its ancestors are read and the tightest quota wins.
 * The process's cgroup paths come from /proc/self/cgroup ("0::/path" for
 * v2, "N:cpu,cpuacct:/path" for v1); inside a container's cgroup namespace
 * they start at the container's own cgroup, which is where a runtime puts
 * the limit.
 */
#include "cpus.h"

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* CPUs in the affinity mask; 0 when it cannot be read. */
static int affinity_cpus(void)
{
    /* a mask larger than the default 1,024 CPUs, for big hosts */
    const int max_cpus = 8192;
    cpu_set_t *set = CPU_ALLOC(max_cpus);
    if (!set) return 0;
    size_t size = CPU_ALLOC_SIZE(max_cpus);
    int n = sched_getaffinity(0, size, set) == 0 ? CPU_COUNT_S(size, set) : 0;
    CPU_FREE(set);
    return n;
}

/* Reads up to two integers from path ("max" reads as -1); the count read. */
static int read_numbers(const char *path, long long *a, long long *b)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char word[32];
    int n = 0;
    if (fscanf(f, "%31s", word) == 1) {
        *a = strcmp(word, "max") == 0 ? -1 : strtoll(word, NULL, 10);
        n = 1;
        if (fscanf(f, "%lld", b) == 1) n = 2;
    }
    fclose(f);
    return n;
}

/* ceil(quota / period) CPUs, or INT_MAX for no quota. */
static int quota_cpus(long long quota, long long period)
{
    if (quota <= 0 || period <= 0) return INT_MAX;
    long long n = (quota + period - 1) / period;
    return n < INT_MAX ? (int)n : INT_MAX;
}

/* The tightest quota on dir (a cgroup directory) and its ancestors down to
 * mount, for v2 (cpu.max) or v1 (cpu.cfs_quota_us, cpu.cfs_period_us). */
static int tightest_quota(const char *mount, const char *cgroup_path, int v2)
{
    char dir[PATH_MAX];
    if ((size_t)snprintf(dir, sizeof dir, "%s%s", mount, cgroup_path) >= sizeof dir) return INT_MAX;
    size_t floor = strlen(mount);
    int best = INT_MAX;
    for (;;) {
        char path[PATH_MAX + 32];
        long long quota = -1, period = -1;
        if (v2) {
            snprintf(path, sizeof path, "%s/cpu.max", dir);
            if (read_numbers(path, &quota, &period) != 2) quota = -1;
        } else {
            long long unused;
            snprintf(path, sizeof path, "%s/cpu.cfs_quota_us", dir);
            if (read_numbers(path, &quota, &unused) < 1) quota = -1;
            snprintf(path, sizeof path, "%s/cpu.cfs_period_us", dir);
            if (read_numbers(path, &period, &unused) < 1) period = -1;
        }
        int cpus = quota_cpus(quota, period);
        if (cpus < best) best = cpus;
        char *slash = strrchr(dir, '/');
        if (!slash || (size_t)(slash - dir) < floor) break;
        *slash = '\0';
    }
    return best;
}

/* The tightest CPU quota of this process's cgroups, or INT_MAX. */
static int cgroup_cpus(void)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f) return INT_MAX;
    int best = INT_MAX;
    char line[PATH_MAX + 128];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *controllers = strchr(line, ':');
        char *path = controllers ? strchr(controllers + 1, ':') : NULL;
        if (!path) continue;
        *path++ = '\0';
        controllers++;
        int cpus = INT_MAX;
        if (strcmp(line, "0") == 0 && controllers[0] == '\0') {
            cpus = tightest_quota("/sys/fs/cgroup", path, 1);
        } else {
            /* a v1 hierarchy that holds the cpu controller */
            char list[256];
            snprintf(list, sizeof list, ",%s,", controllers);
            if (!strstr(list, ",cpu,")) continue;
            cpus = tightest_quota("/sys/fs/cgroup/cpu", path, 0);
            if (cpus == INT_MAX) cpus = tightest_quota("/sys/fs/cgroup/cpu,cpuacct", path, 0);
        }
        if (cpus < best) best = cpus;
    }
    fclose(f);
    return best;
}

int cpus_available(void)
{
    int n = affinity_cpus();
    if (n <= 0) n = (int)sysconf(_SC_NPROCESSORS_ONLN);
    int quota = cgroup_cpus();
    if (n <= 0 || quota < n) n = quota;
    return n > 0 && n < INT_MAX ? n : 1;
}
