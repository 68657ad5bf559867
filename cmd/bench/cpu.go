package main

import (
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
		st, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone since the listing
		}
		s := string(st)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		f := strings.Fields(s[end+2:])
		if len(f) <= 12 {
			continue
		}
		ut, _ := strconv.ParseFloat(f[11], 64)
		stt, _ := strconv.ParseFloat(f[12], 64)
		g := cpuGroup(s[open+1 : end])
		if e.Name() == self {
			g = "load generator"
		}
		out[g] += (ut + stt) / 100 // USER_HZ
	}
	return out
}

func cpuGroup(comm string) string {
	switch {
	case strings.HasPrefix(comm, "temporal"):
		return "temporal"
	case comm == "postgres":
		return "postgres"
	case comm == "java":
		return "kafka"
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
			out[g] = float64(int(ms*100+0.5)) / 100
		}
	}
	return out
}
