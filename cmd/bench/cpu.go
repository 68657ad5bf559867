package main

import (
	"math"
	"os"
	"strconv"
	"strings"
)

// machineCPU is the CPU time so far, in seconds, of every process on the machine,
// by group: the stack's servers, the bench's own processes, and the load generator
// (this process). Everything shares the same cores, so a scenario's rate depends on
// all of them; the report shows each group's share of an operation.
func machineCPU() map[string]float64 {
	out := map[string]float64{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	self := strconv.Itoa(os.Getpid())
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		comm, cpu, ok := procCPU(e.Name())
		if !ok {
			continue // gone since the listing
		}
		g := cpuGroup(comm)
		if g == "postgres" && temporalsDatabase(e.Name()) {
			g = "temporal db"
		}
		if g == "postgres" && postmaster(e.Name()) {
			// Backends that exited (a pool closing idle connections, autovacuum
			// workers) leave their time here, so the group's sum never falls.
			cpu += reapedCPU(e.Name())
		}
		if e.Name() == self {
			g = "load generator"
		}
		out[g] += cpu
	}
	return out
}

// procCPU reads a process's command name and CPU time in seconds (user and system)
// from /proc/<pid>/stat.
func procCPU(pid string) (comm string, seconds float64, ok bool) {
	st, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return "", 0, false
	}
	s := string(st)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open || end+2 > len(s) {
		return "", 0, false
	}
	// Fields after the command name; utime and stime are the 14th and 15th.
	f := strings.Fields(s[end+2:])
	if len(f) <= 12 {
		return "", 0, false
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	stt, _ := strconv.ParseFloat(f[12], 64)
	return s[open+1 : end], (ut + stt) / 100, true // USER_HZ
}

// reapedCPU is the CPU time in seconds of a process's children that have exited
// (cutime and cstime, the 16th and 17th fields of /proc/<pid>/stat).
func reapedCPU(pid string) float64 {
	st, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	s := string(st)
	end := strings.LastIndexByte(s, ')')
	if end < 0 || end+2 > len(s) {
		return 0
	}
	f := strings.Fields(s[end+2:])
	if len(f) <= 14 {
		return 0
	}
	cu, _ := strconv.ParseFloat(f[13], 64)
	cs, _ := strconv.ParseFloat(f[14], 64)
	return (cu + cs) / 100
}

// postmaster says whether a postgres process is the server's parent, whose title
// is its command line rather than "postgres: ...".
func postmaster(pid string) bool {
	b, err := os.ReadFile("/proc/" + pid + "/cmdline")
	return err == nil && !strings.HasPrefix(string(b), "postgres:")
}

// temporalsDatabase says whether a postgres backend serves one of Temporal's
// databases (the cluster profile's server persists in the same PostgreSQL): its
// process title is "postgres: <user> <database> <client> <state>".
func temporalsDatabase(pid string) bool {
	b, err := os.ReadFile("/proc/" + pid + "/cmdline")
	return err == nil && servesTemporal(string(b))
}

func servesTemporal(title string) bool {
	f := strings.Fields(strings.TrimPrefix(strings.ReplaceAll(title, "\x00", " "), "postgres:"))
	return len(f) >= 2 && strings.HasPrefix(f[1], "temporal")
}

func cpuGroup(comm string) string {
	switch {
	case strings.HasPrefix(comm, "temporal"):
		return "temporal"
	case comm == "postgres":
		return "postgres"
	case comm == "java":
		return "kafka"
	case comm == "dbosbench":
		return "dbos"
	case comm == "api", comm == "paysim", strings.HasPrefix(comm, "worker"):
		return strings.TrimRight(comm, "0123456789-")
	}
	return "other"
}

// cpuPerOp is the CPU milliseconds per operation each group spent between two
// readings; groups under 0.05 ms are left out.
func cpuPerOp(before, after map[string]float64, ops int) map[string]float64 {
	out := map[string]float64{}
	for g, v := range after {
		if ms := 1000 * (v - before[g]) / float64(ops); ms >= 0.05 {
			out[g] = math.Round(ms*100) / 100
		}
	}
	return out
}
