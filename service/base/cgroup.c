/*
 * cgroup.c — the tightest CPU quota and memory limit of this process's
 * cgroups (see cgroup.h).
 *
 * A limit applies to a cgroup and everything below it, so the process's own
 * cgroup and each of its ancestors are read and the tightest limit wins.
 * The process's cgroup paths come from /proc/self/cgroup ("0::/path" for
 * v2, "N:cpu,cpuacct:/path" for v1); inside a container's cgroup namespace
 * they start at the container's own cgroup, which is where a runtime puts
 * the limit. Without that namespace a v1 container sees the host's path
 * while its own cgroup is mounted at the hierarchy's root: the walk reads
 * the root too, so it finds the limit there.
 */
#include "cgroup.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CGROUP_ROOT "/sys/fs/cgroup"
/* cgroup v1 writes "no limit" as the largest page-aligned int64 */
#define V1_NO_MEMORY_LIMIT ((long long)1 << 62)

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

/* The limit one cgroup directory sets, LLONG_MAX for none. */
typedef long long (*limit_of_dir)(const char *dir, bool v2);

static long long cpus_of_dir(const char *dir, bool v2)
{
    char path[PATH_MAX + 32];
    long long quota = -1, period = -1, unused;
    if (v2) {
        snprintf(path, sizeof path, "%s/cpu.max", dir);
        if (read_numbers(path, &quota, &period) != 2) quota = -1;
    } else {
        snprintf(path, sizeof path, "%s/cpu.cfs_quota_us", dir);
        if (read_numbers(path, &quota, &unused) < 1) quota = -1;
        snprintf(path, sizeof path, "%s/cpu.cfs_period_us", dir);
        if (read_numbers(path, &period, &unused) < 1) period = -1;
    }
    if (quota <= 0 || period <= 0) return LLONG_MAX;
    return (quota + period - 1) / period;
}

static long long memory_of_dir(const char *dir, bool v2)
{
    char path[PATH_MAX + 32];
    long long bytes = -1, unused;
    snprintf(path, sizeof path, "%s/%s", dir, v2 ? "memory.max" : "memory.limit_in_bytes");
    if (read_numbers(path, &bytes, &unused) < 1 || bytes < 0 || bytes >= V1_NO_MEMORY_LIMIT)
        return LLONG_MAX;
    return bytes;
}

/* The tightest limit of mount + cgroup_path and its ancestors down to mount. */
static long long tightest_under(const char *mount, const char *cgroup_path, bool v2,
                                limit_of_dir limit_of)
{
    char dir[PATH_MAX];
    if ((size_t)snprintf(dir, sizeof dir, "%s%s", mount, cgroup_path) >= sizeof dir)
        return LLONG_MAX;
    size_t floor = strlen(mount);
    long long best = LLONG_MAX;
    for (;;) {
        long long limit = limit_of(dir, v2);
        if (limit < best) best = limit;
        char *slash = strrchr(dir, '/');
        if (!slash || (size_t)(slash - dir) < floor) break;
        *slash = '\0';
    }
    return best;
}

/* The tightest limit over this process's cgroups: the v2 one, and the v1
 * hierarchy holding controller (mounted under its own name, or under the
 * name of the controllers it is mounted with: "cpu,cpuacct"). */
static long long tightest(const char *controller, limit_of_dir limit_of)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f) return LLONG_MAX;
    long long best = LLONG_MAX;
    char line[PATH_MAX + 128];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *controllers = strchr(line, ':');
        char *path = controllers ? strchr(controllers + 1, ':') : NULL;
        if (!path) continue;
        *path++ = '\0';
        controllers++;
        long long limit;
        if (strcmp(line, "0") == 0 && controllers[0] == '\0') {
            limit = tightest_under(CGROUP_ROOT, path, true, limit_of);
        } else {
            char list[256], mount[300];
            snprintf(list, sizeof list, ",%s,", controllers);
            char wanted[64];
            snprintf(wanted, sizeof wanted, ",%s,", controller);
            if (!strstr(list, wanted)) continue;
            snprintf(mount, sizeof mount, CGROUP_ROOT "/%s", controller);
            limit = tightest_under(mount, path, false, limit_of);
            if (limit == LLONG_MAX && strcmp(controllers, controller) != 0) {
                snprintf(mount, sizeof mount, CGROUP_ROOT "/%s", controllers);
                limit = tightest_under(mount, path, false, limit_of);
            }
        }
        if (limit < best) best = limit;
    }
    fclose(f);
    return best;
}

int cgroup_cpu_limit(void)
{
    long long cpus = tightest("cpu", cpus_of_dir);
    return cpus < INT_MAX ? (int)cpus : INT_MAX;
}

int64_t cgroup_memory_limit(void)
{
    long long bytes = tightest("memory", memory_of_dir);
    return bytes == LLONG_MAX ? -1 : (int64_t)bytes;
}
