package capacity

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// DocumentFile is the capacity document, from the repository's root. Its
// figures are generated: each sits in a block between the lines
// "<!-- generated: NAME ... -->" and "<!-- end generated: NAME -->", which
// Regenerate rewrites from the model; the prose around the blocks is
// written by hand and holds no figure.
const DocumentFile = "docs/CAPACITY.md"

// DocumentGeneratedBy is the command that regenerates DocumentFile's
// blocks (the test that holds the document to the model rewrites it).
const DocumentGeneratedBy = "go test ./internal/dev/capacity/ -run TestTheCapacityDocumentIsGenerated -args -update-capacity-doc"

// documentRegion and documentTenants are what the document's plans are
// for: the region the price table has, and one tenant (the per-tenant
// block gives the rest).
const (
	documentRegion  = pricesRegion
	documentTenants = 1
)

// The generated blocks, in the document's order.
const (
	BlockAssumptions = "assumptions"
	BlockPerJob      = "per-job"
	BlockLimits      = "limits"
	BlockTenant      = "tenant"
	BlockGoal        = "goal"
	BlockCost        = "cost"
	BlockSources     = "sources"
)

// DocumentBlocks writes the document's blocks from the counts and the
// template's settings, by name: the plans at GoalGroups, one tenant, in
// the region the price table has.
func DocumentBlocks(counts Counts, s Settings) (map[string]string, error) {
	plans := make([]Plan, len(GoalGroups))
	for i, g := range GoalGroups {
		p, err := Compute(counts, s, Input{Groups: g, Tenants: documentTenants, Region: documentRegion})
		if err != nil {
			return nil, err
		}
		plans[i] = p
	}
	tenant, err := tenantBlock(counts, s, plans[0])
	if err != nil {
		return nil, err
	}
	cost, err := costBlock(plans[0])
	if err != nil {
		return nil, err
	}
	return map[string]string{
		BlockAssumptions: assumptionsBlock(s),
		BlockPerJob:      perJobBlock(counts, plans[0].PerJob, s),
		BlockLimits:      limitsBlock(plans),
		BlockTenant:      tenant,
		BlockGoal:        goalBlock(plans),
		BlockCost:        cost,
		BlockSources:     sourcesBlock(),
	}, nil
}

// blockPattern finds a generated block: its first line names it, its last
// line ends it; the text between is the block's.
var blockPattern = regexp.MustCompile(`(?ms)^<!-- generated: ([a-z-]+) [^\n]*-->\n(.*?)^<!-- end generated: ([a-z-]+) -->$`)

// Regenerate returns doc with each block's text replaced by blocks'. A
// block the document lacks or holds twice, a block it holds that blocks do
// not have, and an end line naming another block are errors that name
// the block.
func Regenerate(doc []byte, blocks map[string]string) ([]byte, error) {
	seen := map[string]int{}
	var bad error
	out := blockPattern.ReplaceAllFunc(doc, func(m []byte) []byte {
		sub := blockPattern.FindSubmatch(m)
		name, end := string(sub[1]), string(sub[3])
		seen[name]++
		text, ok := blocks[name]
		switch {
		case bad != nil:
		case name != end:
			bad = fmt.Errorf("%w: %s: block %q ends as %q", ErrInvalid, DocumentFile, name, end)
		case !ok:
			bad = fmt.Errorf("%w: %s: block %q: the model writes no such block (it writes %v)", ErrInvalid, DocumentFile, name, slices.Sorted(maps.Keys(blocks)))
		case seen[name] > 1:
			bad = fmt.Errorf("%w: %s: block %q twice", ErrInvalid, DocumentFile, name)
		}
		return []byte(blockStart(name) + "\n" + strings.TrimSuffix(text, "\n") + "\n" + blockEnd(name))
	})
	if bad != nil {
		return nil, bad
	}
	for _, name := range slices.Sorted(maps.Keys(blocks)) {
		if seen[name] == 0 {
			return nil, fmt.Errorf("%w: %s: no block %q (its lines: %q ... %q)", ErrInvalid, DocumentFile, name, blockStart(name), blockEnd(name))
		}
	}
	return out, nil
}

func blockStart(name string) string {
	return "<!-- generated: " + name + " by `" + DocumentGeneratedBy + "`; do not edit -->"
}

func blockEnd(name string) string { return "<!-- end generated: " + name + " -->" }

func assumptionsBlock(s Settings) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The model's batch times: a worker batch of the reference task (the holds read, then per lane "+
		"claim, one page, the candidate, accept; lanes concurrent) takes **t_w = %s ms**, a projector batch (the holds read, then "+
		"per event a view update and, for an event that adds to the totals, a totals transaction) **t_p = %s ms**: the p50s "+
		"`make bench-memory` measured at the templates' 512 MB on the local emulators (docs/BENCHMARKS.md, Memory sizes), an "+
		"upper bound of AWS's latencies and what that CPU share allows. An intake invocation is assumed to take %s ms, a relay "+
		"invocation %s ms. Items are under 1 KB: one write unit a write, %d in a transaction. "+
		"The plans below are for %s, %d tenant, at %s groups in flight (each job is its own group).\n\n",
		ms(WorkerBatchSeconds), ms(ProjectorBatchSeconds), ms(IntakeSeconds), ms(RelayInvocationSeconds), transactionalWrites,
		documentRegion, documentTenants, joinCommas(GoalGroups))
	b.WriteString("The settings, as the model reads them from template.yaml:\n\n| setting | value | read from |\n|---|---|---|\n")
	for _, st := range s.List() {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", st.Name, Num(st.Value), st.Source)
	}
	return b.String()
}

func perJobBlock(counts Counts, p PerJob, s Settings) string {
	var b strings.Builder
	b.WriteString("| resource | per job |\n|---|---|\n")
	fmt.Fprintf(&b, "| Jobs table | %s write units; its `live` index %s writes over %s partition-key values (`LiveShards`), its `finished` index %s |\n",
		Num(p.JobsWRU), Num(p.LiveWrites), Num(s.LiveShards.Value), Num(p.FinishedWrites))
	fmt.Fprintf(&b, "| Totals table | %s write units, all %s on one partition-key value (the tenant's, or with `TotalsShards` its shard's), %s of them on one total item; %s shard(s) per tenant |\n",
		Num(p.TotalsWRU), Num(p.TotalsKeyWRU), Num(p.TotalItemWRU), Num(s.TotalsShards.Value))
	fmt.Fprintf(&b, "| Views table | %s write units |\n", Num(p.ViewsWRU))
	fmt.Fprintf(&b, "| reads | %s read units (each counted read one) |\n", Num(p.ReadUnits))
	fmt.Fprintf(&b, "| S3 | %s `PutObject` |\n", Num(p.S3Puts))
	fmt.Fprintf(&b, "| SQS | %s command(s) and %s event(s) |\n", Num(p.Commands), Num(p.Events))
	fmt.Fprintf(&b, "| API Gateway | %s `POST /jobs` |\n", Num(p.APIRequests))
	b.WriteString("\nFrom these counted requests of the happy path (`internal/dev/capacity/requests.json`):")
	happy := counts.Paths[PathHappy]
	for _, fn := range slices.Sorted(maps.Keys(happy)) {
		var ops []string
		for _, op := range slices.Sorted(maps.Keys(happy[fn])) {
			ops = append(ops, fmt.Sprintf("%s %d", op, happy[fn][op]))
		}
		fmt.Fprintf(&b, " %s: %s;", fn, strings.Join(ops, ", "))
	}
	return strings.TrimSuffix(b.String(), ";") + ".\n"
}

func limitsBlock(plans []Plan) string {
	var b strings.Builder
	for _, p := range plans {
		first := p.Limits[0]
		fmt.Fprintf(&b, "At %s groups the first limit to bind is `%s` (%s, **%s jobs/s**)", groupsOf(p), first.Key, first.Owner, Commas(first.JobsPerS))
		if i := slices.IndexFunc(p.Limits, func(l Limit) bool { return l.Owner == Ours }); i >= 0 {
			fmt.Fprintf(&b, "; the first of ours is number %d, `%s` (**%s jobs/s**)", i+1, p.Limits[i].Key, Commas(p.Limits[i].JobsPerS))
		}
		b.WriteString(".\n")
	}
	b.WriteString("\n| # | limit | owner |")
	for _, p := range plans {
		fmt.Fprintf(&b, " jobs/s at %s groups |", groupsOf(p))
	}
	b.WriteString(" to go past it |\n|---|---|---|" + strings.Repeat("---|", len(plans)) + "---|\n")
	for i, l := range plans[0].Limits {
		fmt.Fprintf(&b, "| %d | %s | %s |", i+1, cell(l.Name), l.Owner)
		for _, p := range plans {
			fmt.Fprintf(&b, " %s |", Commas(limitOf(p, l.Key).JobsPerS))
		}
		fmt.Fprintf(&b, " %s |\n", cell(l.Raise))
	}
	for _, p := range plans[1:] {
		fmt.Fprintf(&b, "\nAt %s groups the order is:", groupsOf(p))
		for i, l := range p.Limits {
			fmt.Fprintf(&b, " %d. %s (%s);", i+1, l.Key, Commas(l.JobsPerS))
		}
		b.WriteString("\n")
	}
	return strings.ReplaceAll(b.String(), ";\n", ".\n")
}

// tenantShardCounts are the totals shard counts the tenant block shows:
// one, the template's default and its parameter's bound, as they differ.
func tenantShardCounts(s Settings) []float64 {
	counts := []float64{1, s.TotalsShards.Value}
	if _, hi, ok := strings.Cut(s.TotalsShards.Range, " to "); ok {
		if n, err := strconv.ParseFloat(hi, 64); err == nil {
			counts = append(counts, n)
		}
	}
	slices.Sort(counts)
	return slices.Compact(counts)
}

func tenantBlock(counts Counts, s Settings, first Plan) (string, error) {
	var b strings.Builder
	p := first.PerJob
	fmt.Fprintf(&b, "One tenant alone reaches its totals' ceiling: shards × min(%s / %s, %s / %s) jobs/s, the write units a job puts "+
		"on one partition-key value and on one total item against DynamoDB's limits per partition-key value and per item. "+
		"With %s shard(s) (%s) that is **%s jobs/s**; by shard count:\n\n| `TotalsShards` | jobs/s for one tenant |\n|---|---|\n",
		Commas(partitionWrites.Value), Num(p.TotalsKeyWRU), Commas(itemWrites.Value), Num(p.TotalItemWRU),
		Num(s.TotalsShards.Value), s.TotalsShards.Source, Commas(first.TenantJobsPerS))
	for _, n := range tenantShardCounts(s) {
		alt := s
		alt.TotalsShards.Value = n
		pl, err := Compute(counts, alt, Input{Groups: first.Groups, Tenants: 1, Region: documentRegion})
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "| %s | %s |\n", Num(n), Commas(pl.TenantJobsPerS))
	}
	fmt.Fprintf(&b, "\nThe first limit, shared: with %d tenant at %s groups each tenant gets **%s jobs/s** "+
		"(`fifoworker capacity --tenants T` shares it among T).\n", documentTenants, groupsOf(first), Commas(first.PerTenantJobsPerS))
	return b.String(), nil
}

func goalBlock(plans []Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**The goal** (issue 19), on paper: with template.yaml's defaults, at %s groups, the limits that bind first are AWS's, "+
		"never ours: each limit of ours allows more jobs per second than the lowest of the quotas a user can raise (Lambda's concurrency, "+
		"API Gateway's throttle, a table's on-demand maximum); below those only AWS's own bind (a new table's initial throughput, which "+
		"warm throughput raises; S3's rate per prefix, which S3 raises as it partitions the prefix under load; SQS FIFO's one batch "+
		"in flight per group, which more groups raise); and a single tenant "+
		"reaches at least %s jobs/s. With the committed template and counts:",
		joinCommas(GoalGroups), Commas(GoalTenantJobsPerS))
	for _, p := range plans {
		short := p.GoalShortfalls()
		if len(short) == 0 {
			fmt.Fprintf(&b, "\n- at %s groups it **holds**.", groupsOf(p))
			continue
		}
		fmt.Fprintf(&b, "\n- at %s groups it **does not hold**:", groupsOf(p))
		for _, s := range short {
			fmt.Fprintf(&b, "\n  - %s", s)
		}
	}
	return b.String() + "\n"
}

func costBlock(p Plan) (string, error) {
	if p.Cost == nil {
		return "", fmt.Errorf("%w: no cost in %s: %s", ErrInvalid, p.Region, p.CostNote)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The cost of a million jobs at %s list prices (read %s), USD:\n\n| service | item | quantity | price | USD |\n|---|---|---|---|---|\n",
		p.Cost.Region, PricesAsOf)
	for _, l := range p.Cost.Lines {
		fmt.Fprintf(&b, "| %s | %s | %s %s | %s per %s | %.4f |\n", l.Service, cell(l.Item), Num(math.Round(l.Quantity*1000)/1000), l.Unit,
			strconv.FormatFloat(l.PriceUSD, 'f', -1, 64), Num(l.PricePer), RoundUSD(l.USD))
	}
	byService := p.Cost.ByService()
	var services []string
	for _, l := range p.Cost.Lines {
		s := fmt.Sprintf("%s %.4f", l.Service, RoundUSD(byService[l.Service]))
		if !slices.Contains(services, s) {
			services = append(services, s)
		}
	}
	fmt.Fprintf(&b, "\nBy service: %s. **Total: %.4f USD per million jobs.** It assumes:\n\n", strings.Join(services, ", "), RoundUSD(p.Cost.TotalUSD))
	for _, a := range CostAssumptions {
		fmt.Fprintf(&b, "- %s\n", a)
	}
	return b.String(), nil
}

func sourcesBlock() string {
	var b strings.Builder
	b.WriteString("AWS's quotas the model uses (`internal/dev/capacity/quotas.go`; the regional ones by region there):\n\n")
	for _, q := range Quotas() {
		value := "by region"
		if q.Value > 0 {
			value = Commas(q.Value) + " " + q.Unit
		}
		fmt.Fprintf(&b, "- %s: %s, %s. %s\n", q.Name, value, q.Owner, q.Source)
	}
	fmt.Fprintf(&b, "\nList prices (`internal/dev/capacity/prices.go`, read %s, each with what was read; most figures only on dated third-party pages, "+
		"marked unconfirmed on AWS's page there):\n\n", PricesAsOf)
	for _, p := range Prices() {
		fmt.Fprintf(&b, "- %s %s: %s\n", p.Service, p.Item, p.Source)
	}
	return b.String()
}

// limitOf is p's limit of key (the plans at other groups hold the same
// keys).
func limitOf(p Plan, key string) Limit {
	for _, l := range p.Limits {
		if l.Key == key {
			return l
		}
	}
	return Limit{Key: key, JobsPerS: math.NaN()}
}

func groupsOf(p Plan) string { return Commas(float64(p.Groups)) }

// cell makes text safe in a Markdown table cell.
func cell(text string) string { return strings.ReplaceAll(text, "|", `\|`) }

// ms is seconds in milliseconds.
func ms(seconds float64) string { return Num(seconds * 1000) }

func joinCommas(ns []int) string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = Commas(float64(n))
	}
	return strings.Join(out, " and ")
}

// Num writes a number with thousands separators and the fraction it has
// (at most 3 decimals): 8125.5 is "8,125.5".
func Num(f float64) string {
	f = math.Round(f*1000) / 1000
	whole := math.Trunc(f)
	frac := strings.TrimPrefix(strconv.FormatFloat(math.Abs(f-whole), 'f', -1, 64), "0")
	if len(frac) > 4 {
		frac = frac[:4]
	}
	return Commas(whole) + frac
}

// RegenerateDocument is doc with its blocks written from the counts and
// the template's settings.
func RegenerateDocument(doc []byte, counts Counts, s Settings) ([]byte, error) {
	blocks, err := DocumentBlocks(counts, s)
	if err != nil {
		return nil, err
	}
	return Regenerate(doc, blocks)
}
