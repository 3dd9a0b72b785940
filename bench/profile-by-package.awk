# Sums the flat CPU time of a Go CPU profile by package group, from
# `go tool pprof -top -unit=ms -nodefraction=0 -nodecount=100000 PROFILE`:
# how much of this process's CPU went to our own packages, to the AWS SDK,
# to net/http and system calls, to encoding/json, and to the Go runtime
# (allocation, garbage collection, scheduling). Used by `make bench-stack`.
$1 ~ /ms$/ && $2 ~ /%$/ {
	ms = $1; sub(/ms$/, "", ms)
	name = $6
	for (i = 7; i <= NF; i++) name = name " " $i
	group = "other"
	if (name ~ /github\.com\/fifoworker\/fifoworker/) group = "ours (github.com/fifoworker/fifoworker/...)"
	else if (name ~ /aws-sdk-go-v2|smithy-go|aws-lambda-go/) group = "AWS SDK and aws-lambda-go"
	else if (name ~ /^(encoding\/json|reflect|strconv|unicode)/) group = "encoding/json, reflect, strconv"
	else if (name ~ /^(crypto|hash|vendor\/golang.org\/x\/crypto)/) group = "crypto (SigV4 signing)"
	else if (name ~ /^(net|syscall|internal\/runtime\/syscall|internal\/poll|bufio|io|vendor\/golang.org\/x\/net|mime|compress)/) group = "net/http, I/O, system calls"
	else if (name ~ /^(runtime|internal\/runtime|internal\/bytealg|gcWriteBarrier|aeshash|memeqbody|indexbyte|sync|context|time|sort|slices|maps|strings|bytes)/) group = "Go runtime (GC, allocation, scheduling) and std containers"
	sum[group] += ms
	total += ms
}
END {
	printf "\nFlat CPU by package group (%.0f ms in all):\n", total
	for (g in sum) printf "%7.0f ms %5.1f%%  %s\n", sum[g], 100 * sum[g] / total, g | "sort -rn"
}
