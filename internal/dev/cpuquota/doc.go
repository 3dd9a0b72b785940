// Package cpuquota runs a process under a CPU quota and reads its peak
// resident memory, for `make bench-memory`: Lambda gives a function a
// share of CPU in proportion to its memory size (1,769 MB is one vCPU), so
// a function's latency at a memory size is measured by running its
// bootstrap in a cgroup whose CPU quota is that share.
//
// A Group is one cgroup directory under the cpu controller: cgroup v2's
// unified hierarchy when the root holds cgroup.controllers (the quota is
// cpu.max), v1's cpu hierarchy otherwise (cpu.cfs_quota_us and
// cpu.cfs_period_us). Creating it needs root; New fails saying so, and
// saying which controller it looked for, rather than run without a quota.
// A process enters the group itself, before it execs the bootstrap
// (Wrap), so that the bootstrap's init runs under the quota too; and its
// children inherit it.
package cpuquota
