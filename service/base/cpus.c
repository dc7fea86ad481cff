/*
 * cpus.c — the CPUs this process may use (see cpus.h): its affinity mask,
 * capped by cgroup.c's quota.
 */
#include "cpus.h"

#include <limits.h>
#include <sched.h>
#include <unistd.h>

#include "cgroup.h"

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

int cpus_available(void)
{
    int n = affinity_cpus();
    if (n <= 0) n = (int)sysconf(_SC_NPROCESSORS_ONLN);
    int quota = cgroup_cpu_limit();
    if (n <= 0 || quota < n) n = quota;
    return n > 0 && n < INT_MAX ? n : 1;
}
