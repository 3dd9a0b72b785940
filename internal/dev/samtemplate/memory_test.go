package samtemplate_test

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// memorySizes is each function's MemorySize in MB, the same in every
// template, chosen by memoryRule from `make bench-memory`'s figures in
// memoryBenchFile (BenchmarkMemorySize: the SQS and DynamoDB bootstraps
// under the CPU share of 128, 256 and 512 MB and with no quota), which
// docs/BENCHMARKS.md ("Memory sizes") shows beside the choice. The tests
// below hold the templates, the figures and the document to it.
var memorySizes = map[string]memorySize{
	"IntakeFunction":    {MB: 256, Measured: "intake"},
	"RelayFunction":     {MB: 128, Measured: "relay"},
	"WorkerFunction":    {MB: 512, Measured: "worker"},
	"ProjectorFunction": {MB: 512, Measured: "projector"},
	"SweeperFunction":   {MB: 512, Measured: "sweeper"},
	// Not measured: it runs once per deployment (the schema's custom
	// resource), so its size costs nothing worth measuring; it keeps the
	// 256 MB every function had before the measurements.
	"MigrateFunction": {MB: 256},
}

// memorySize is one function's choice.
type memorySize struct {
	MB int
	// Measured is the function's name in memoryBenchFile's benchmarks
	// ("fn=worker"); empty for a function not measured.
	Measured string
}

// memoryBenchFile holds BenchmarkMemorySize's raw output.
const memoryBenchFile = "../../../bench/memory.txt"

// The rule. A size's latency is the median over the rounds of its p50
// latency per invocation. The choice is the smallest of memoryLevels whose
// latency is at most memoryTolerance above the next level's (512 MB's:
// above the latency with no quota, which no size beats): from there,
// doubling the memory doubles the price of a millisecond and buys at most
// a sixth of the time back, so GB-seconds per invocation grow by at least
// 2/1.2 = 1.67 times. Below it, a function is CPU-bound enough that the
// larger size costs about the same GB-seconds and answers faster. And a
// size is at least memoryRSSMargin times the function's largest peak RSS:
// room for an input the benchmark did not have (a page of larger articles,
// a batch of longer events) before the heap reaches the limit.
var memoryLevels = []string{"128", "256", "512", "none"}

const (
	memoryTolerance = 0.20
	memoryRSSMargin = 2
)

// memoryFigures are one function's figures from memoryBenchFile.
type memoryFigures struct {
	p50     map[string]float64 // ms, by level: the median over the rounds of p50-ms
	peakMiB float64            // the largest peak-rss-MiB at any level
}

// memoryRule is the size the rule chooses from f.
func memoryRule(f memoryFigures) int {
	measured := memoryLevels[:len(memoryLevels)-1]
	for i, level := range measured {
		mb, _ := strconv.Atoi(level)
		if float64(mb) < memoryRSSMargin*f.peakMiB*1.048576 { // MiB to MB
			continue
		}
		if f.p50[level] <= (1+memoryTolerance)*f.p50[memoryLevels[i+1]] {
			return mb
		}
	}
	mb, _ := strconv.Atoi(measured[len(measured)-1])
	return mb // still CPU-bound at the largest measured size: that size
}

// benchLine is a line of BenchmarkMemorySize's output:
// BenchmarkMemorySize/round=1/mb=128/fn=intake-2  20  82126689 ns/op  2.500 cpu-ms/op ...
var benchLine = regexp.MustCompile(`^BenchmarkMemorySize/round=\d+/mb=(\w+)/fn=(\w+)-\d+\s+\d+\s+(.*)$`)

// readMemoryFigures reads each measured function's figures from raw
// BenchmarkMemorySize output.
func readMemoryFigures(raw []byte) (map[string]memoryFigures, error) {
	p50s := map[string]map[string][]float64{} // function, level
	peak := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		level, fn := m[1], m[2]
		if !slices.Contains(memoryLevels, level) {
			return nil, fmt.Errorf("%q: level %s is not one of %v", sc.Text(), level, memoryLevels)
		}
		metrics := map[string]float64{}
		f := strings.Fields(m[3])
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", sc.Text(), err)
			}
			metrics[f[i+1]] = v
		}
		p50, ok1 := metrics["p50-ms"]
		rss, ok2 := metrics["peak-rss-MiB"]
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("%q: no p50-ms or peak-rss-MiB", sc.Text())
		}
		if p50s[fn] == nil {
			p50s[fn] = map[string][]float64{}
		}
		p50s[fn][level] = append(p50s[fn][level], p50)
		peak[fn] = max(peak[fn], rss)
	}
	out := map[string]memoryFigures{}
	for fn, byLevel := range p50s {
		f := memoryFigures{p50: map[string]float64{}, peakMiB: peak[fn]}
		for _, level := range memoryLevels {
			v := slices.Sorted(slices.Values(byLevel[level]))
			if len(v) == 0 {
				return nil, fmt.Errorf("%s: no figure at %s", fn, level)
			}
			f.p50[level] = v[len(v)/2] // the rounds are odd in number: the middle one
		}
		out[fn] = f
	}
	return out, nil
}

func loadMemoryFigures(t *testing.T) map[string]memoryFigures {
	t.Helper()
	raw, err := os.ReadFile(memoryBenchFile)
	require.NoError(t, err)
	figures, err := readMemoryFigures(raw)
	require.NoError(t, err)
	return figures
}

// Every function of every template has its own MemorySize, the one
// chosen; Globals has none, so a new function cannot take a size nobody
// chose: it fails here until it is in memorySizes.
func TestEachFunctionHasTheMemorySizeChosenFromMeasurements(t *testing.T) {
	t.Parallel()
	templates := map[string]*samtemplate.Template{
		"template.yaml": loadRepoTemplate(t), "template-kafka.yaml": loadKafkaTemplate(t),
		"template-postgres.yaml": loadPostgresTemplate(t), "template-kafka-postgres.yaml": loadKafkaPostgresTemplate(t),
	}
	seen := map[string]bool{}
	for name, tpl := range templates {
		globals, _ := tpl.Globals["Function"].(map[string]any)
		require.NotContains(t, globals, "MemorySize", "%s: each function has its own MemorySize, none in Globals", name)
		fns := tpl.OfType("AWS::Serverless::Function")
		require.NotEmpty(t, fns, name)
		for _, fn := range fns {
			want, ok := memorySizes[fn]
			require.True(t, ok, "%s: %s has no chosen MemorySize in memorySizes", name, fn)
			require.Equal(t, want.MB, tpl.Resources[fn].Properties["MemorySize"], "%s: %s's MemorySize", name, fn)
			seen[fn] = true
		}
	}
	require.ElementsMatch(t, slices.Collect(maps.Keys(memorySizes)), slices.Collect(maps.Keys(seen)), "memorySizes names the templates' functions, no others")
}

// Each measured function's size is what the rule chooses from the
// figures in memoryBenchFile, and each function the benchmark measured
// has a size chosen from them.
func TestTheMemorySizesFollowTheRuleOnTheMeasurements(t *testing.T) {
	t.Parallel()
	figures := loadMemoryFigures(t)
	for fn, choice := range memorySizes {
		if choice.Measured == "" {
			continue
		}
		f, ok := figures[choice.Measured]
		require.True(t, ok, "%s: no figures of %s in %s", fn, choice.Measured, memoryBenchFile)
		require.Equal(t, memoryRule(f), choice.MB, "%s: the rule on %+v", fn, f)
		delete(figures, choice.Measured)
	}
	require.Empty(t, figures, "functions measured in %s without a size chosen from their figures", memoryBenchFile)
}

func TestTheMemoryRuleTakesTheSmallestSizeWithinToleranceOfTheNext(t *testing.T) {
	t.Parallel()
	at := func(p50s ...float64) memoryFigures {
		f := memoryFigures{p50: map[string]float64{}, peakMiB: 15}
		for i, v := range p50s {
			f.p50[memoryLevels[i]] = v
		}
		return f
	}
	require.Equal(t, 128, memoryRule(at(12, 10, 9, 9)), "128 at exactly 20% above 256")
	require.Equal(t, 256, memoryRule(at(12.01, 10, 8.34, 8)), "128 just over 20% above 256; 256 within 20% of 512")
	require.Equal(t, 512, memoryRule(at(40, 20, 12, 10)), "512 at exactly 20% above no quota")
	require.Equal(t, 512, memoryRule(at(80, 40, 20, 10)), "CPU-bound up to the largest size: that size")
	large := at(10, 10, 10, 10)
	large.peakMiB = 128 / memoryRSSMargin / 1.048576
	require.Equal(t, 128, memoryRule(large), "a peak of exactly half the size fits")
	large.peakMiB += 0.01
	require.Equal(t, 256, memoryRule(large), "a peak over half of 128 MB: not 128")
}

func TestReadMemoryFiguresTakesTheMedianRoundAndTheLargestPeak(t *testing.T) {
	t.Parallel()
	var raw strings.Builder
	raw.WriteString("goos: linux\n# load 1.0\n")
	for round, p50 := range []float64{30, 10, 20} {
		for _, level := range memoryLevels {
			fmt.Fprintf(&raw, "BenchmarkMemorySize/round=%d/mb=%s/fn=worker-2  20  1234 ns/op  %.1f p50-ms  %.1f peak-rss-MiB\n", round+1, level, p50, 10+float64(round))
		}
	}
	got, err := readMemoryFigures([]byte(raw.String()))
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.InDelta(t, 20, got["worker"].p50["256"], 1e-9)
	require.InDelta(t, 12, got["worker"].peakMiB, 1e-9)

	_, err = readMemoryFigures([]byte("BenchmarkMemorySize/round=1/mb=1024/fn=worker-2 20 1 ns/op 1 p50-ms 1 peak-rss-MiB\n"))
	require.ErrorContains(t, err, "level 1024")
	_, err = readMemoryFigures([]byte("BenchmarkMemorySize/round=1/mb=128/fn=worker-2 20 1 ns/op 1 p90-ms\n"))
	require.ErrorContains(t, err, "no p50-ms")
	_, err = readMemoryFigures([]byte("BenchmarkMemorySize/round=1/mb=128/fn=worker-2 20 1 ns/op 1 p50-ms 1 peak-rss-MiB\n"))
	require.ErrorContains(t, err, "no figure at 256")
}

// docs/BENCHMARKS.md's "Memory sizes" section has a row per measured
// function with its latencies from memoryBenchFile and its chosen size,
// and a row per function not measured saying so with its size.
func TestBenchmarksDocShowsTheFiguresBesideTheChosenMemorySizes(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../../docs/BENCHMARKS.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(raw), "\n## Memory sizes\n")
	require.True(t, ok, "docs/BENCHMARKS.md has a section \"## Memory sizes\"")
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	rows := map[string][]string{}
	for line := range strings.Lines(section) {
		cells := strings.Split(strings.TrimSpace(line), "|")
		if len(cells) < 4 || cells[0] != "" {
			continue
		}
		cells = cells[1 : len(cells)-1]
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows[strings.Trim(cells[0], "`")] = cells
	}
	figures := loadMemoryFigures(t)
	for fn, choice := range memorySizes {
		name := strings.ToLower(strings.TrimSuffix(fn, "Function"))
		row, ok := rows[name]
		require.True(t, ok, "the Memory sizes table has a row %q", name)
		require.Equal(t, strconv.Itoa(choice.MB), strings.Trim(row[len(row)-1], "*"), "%s: the size chosen, in the last column", name)
		if choice.Measured == "" {
			require.Contains(t, strings.Join(row, " "), "not measured", name)
			continue
		}
		f := figures[choice.Measured]
		var p50s []string
		for _, level := range memoryLevels {
			p50s = append(p50s, strconv.FormatFloat(f.p50[level], 'f', 1, 64))
		}
		require.Equal(t, strings.Join(p50s, " / "), row[1], "%s: the p50s at %v from %s", name, memoryLevels, memoryBenchFile)
	}
}
