/*
 * cgroup.h — the limits this process's control groups set: the tightest CPU
 * quota and memory limit of its cgroup and of every ancestor, cgroup v2
 * (cpu.max, memory.max) or v1 (cpu.cfs_quota_us / cpu.cfs_period_us,
 * memory.limit_in_bytes). That is how a container's limits (docker --cpus
 * and --memory, a Kubernetes pod's limits) and a systemd unit's CPUQuota=
 * and MemoryMax= reach the daemon.
 */
#ifndef LMSCORED_CGROUP_H
#define LMSCORED_CGROUP_H

#include <stdint.h>

/* ceil(quota / period) CPUs, or INT_MAX without a quota. */
int cgroup_cpu_limit(void);
/* Bytes, or -1 without a limit. */
int64_t cgroup_memory_limit(void);

#endif
