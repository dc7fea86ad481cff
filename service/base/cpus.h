/*
 * cpus.h — how many CPUs this process may use: the CPUs of its affinity
 * mask, capped by the CPU quota of its cgroups (cgroup v2 cpu.max, v1
 * cpu.cfs_quota_us / cpu.cfs_period_us), which is how a container's CPU
 * limit (docker --cpus, a Kubernetes limits.cpu) reaches it. The daemon
 * sizes its engine threads from this, so that a pod limited to 2 CPUs on a
 * 64-core node runs 2 threads, not 64.
 */
#ifndef LMSCORED_CPUS_H
#define LMSCORED_CPUS_H

/* At least 1. A quota of q CPU-seconds per second counts as ceil(q) CPUs. */
int cpus_available(void);

#endif
