package capacity

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/fifoworker/fifoworker/internal/lambdawire"
)

// The batch times the model uses (docs/CAPACITY.md). The worker's and the
// projector's are the p50s make bench-memory measured at the MemorySize
// the templates give them, 512 MB (docs/BENCHMARKS.md, "Memory sizes"):
// on the local emulators, which answer more slowly than DynamoDB's
// single-digit milliseconds, so an upper bound of AWS's, and not below
// what the CPU share of 512 MB allows: the worker's batch takes 49 ms of
// CPU, about 170 ms at 512/1769 of a vCPU. (They were 100 and 50 ms,
// assumed from AWS's latencies alone, which that CPU share rules out.)
const (
	// WorkerBatchSeconds is t_w, a worker batch of the reference task:
	// the holds read, then per lane claim, one page, the candidate,
	// accept; ten lanes concurrent.
	WorkerBatchSeconds = 0.183
	// ProjectorBatchSeconds is t_p, a projector batch of ten events: the
	// holds read, then per event a view update and, for an event that
	// adds, a totals transaction.
	ProjectorBatchSeconds = 0.058
	// IntakeSeconds is an intake invocation's time (a POST /jobs).
	IntakeSeconds = 0.015
)

// Input is what a plan is for.
type Input struct {
	Groups  int    // message groups in flight (each job is its own group): at least 1
	Tenants int    // tenants sharing the load evenly: at least 1
	Region  string // an AWS commercial region (Regions)
}

// Validate refuses groups or tenants below 1 and an unknown region.
func (in Input) Validate() error {
	if in.Groups < 1 {
		return fmt.Errorf("%w: groups %d: at least 1", ErrInvalid, in.Groups)
	}
	if in.Tenants < 1 {
		return fmt.Errorf("%w: tenants %d: at least 1", ErrInvalid, in.Tenants)
	}
	_, err := Region(in.Region)
	return err
}

// Limit is one limit and the jobs per second it allows in all (the
// tenants' load added up).
type Limit struct {
	Key      string // a stable short name, e.g. "tenant-total" (not in the JSON)
	Name     string
	Owner    Owner
	JobsPerS float64
	Raise    string
	// For a limit of ours that grows in proportion to one setting: its
	// parameter and the jobs per second one unit of it allows (before
	// rounding), from which GoalShortfalls says what default clears it.
	parameter string
	perUnit   float64
}

// Plan is the limits in the order they bind (fewest jobs per second
// first) and what each tenant can do.
type Plan struct {
	Region  string // the input's region
	Groups  int    // the input's groups in flight
	Tenants int    // the input's tenants
	Limits  []Limit
	// PerTenantJobsPerS is the first limit's jobs per second shared by
	// the tenants.
	PerTenantJobsPerS float64
	// TenantJobsPerS is one tenant's own ceiling, its totals' (the
	// "tenant-totals" limit for one tenant): what a tenant alone reaches
	// once the shared limits before it are raised.
	TenantJobsPerS float64
	PerJob         PerJob
	Settings       Settings
	// Cost is a million jobs' at the region's list prices; nil when the
	// price table has none for the region, and CostNote says so.
	Cost     *Cost
	CostNote string
}

// Compute plans in from the counted requests and the template's settings.
func Compute(counts Counts, s Settings, in Input) (Plan, error) {
	if err := in.Validate(); err != nil {
		return Plan{}, err
	}
	happy, ok := counts.Paths[PathHappy]
	if !ok {
		return Plan{}, fmt.Errorf("%w: %s has no %q path", ErrInvalid, RequestsFile, PathHappy)
	}
	p, err := perJob(happy)
	if err != nil {
		return Plan{}, err
	}
	rq, _ := Region(in.Region) // validated
	// The worker's lanes spool at once while its budget holds them.
	lanes := min(s.WorkerBatch.Value, math.Floor(float64(lambdawire.SpoolBudget(int(s.WorkerStorageMB.Value)))/s.MaxCandidateBytes.Value))
	if lanes < 1 {
		return Plan{}, fmt.Errorf("%w: the worker's storage (%v MB) spools no candidate of %v bytes", ErrInvalid, s.WorkerStorageMB.Value, s.MaxCandidateBytes.Value)
	}
	tenant := tenantLimit(p, s)
	tenant.JobsPerS *= float64(in.Tenants)
	tenant.perUnit *= float64(in.Tenants)
	limits := []Limit{tenant}
	tables := []struct {
		name string
		wru  float64
	}{{"Jobs", p.JobsWRU}, {"Totals", p.TotalsWRU}, {"Views", p.ViewsWRU}}
	for i, q := range []Quota{newTableWrites, tableMaxWrites} {
		for _, t := range tables {
			limits = append(limits, Limit{
				Key:   strings.ToLower(t.name) + []string{"-new-table", "-table-max"}[i],
				Name:  fmt.Sprintf("%s table: %s, %v %s (%v per job)", t.name, q.Name, q.Value, q.Unit, t.wru),
				Owner: q.Owner, JobsPerS: q.Value / t.wru, Raise: q.Raise,
			})
		}
	}
	// Our limits grow in proportion to one setting each: per unit of it.
	projectorPer := s.ProjectorBatch.Value / ProjectorBatchSeconds / p.Events
	workerPer := lanes / WorkerBatchSeconds / p.Commands
	livePer := partitionWrites.Value / p.LiveWrites
	limits = append(limits,
		Limit{
			Key:       "projector-concurrency",
			Name:      fmt.Sprintf("the projector's MaximumConcurrency %v, %v events a batch", s.ProjectorConcurrency.Value, s.ProjectorBatch.Value),
			Owner:     Ours,
			JobsPerS:  s.ProjectorConcurrency.Value * projectorPer,
			Raise:     raiseSetting(s.ProjectorConcurrency, "ProjectorMaxConcurrency", "projections lag beyond it, jobs still complete"),
			parameter: "ProjectorMaxConcurrency", perUnit: projectorPer,
		},
		Limit{
			Key:       "worker-concurrency",
			Name:      fmt.Sprintf("the worker's MaximumConcurrency %v, %v lanes a batch", s.WorkerConcurrency.Value, lanes),
			Owner:     Ours,
			JobsPerS:  s.WorkerConcurrency.Value * workerPer,
			Raise:     raiseSetting(s.WorkerConcurrency, "WorkerMaxConcurrency", "keep 90% of the worker's storage (WorkerEphemeralStorage) at ten MaxCandidateBytes"),
			parameter: "WorkerMaxConcurrency", perUnit: workerPer,
		},
		Limit{
			Key:   "s3-prefix",
			Name:  fmt.Sprintf("%s, %v %s (%v per job)", s3PrefixPuts.Name, s3PrefixPuts.Value, s3PrefixPuts.Unit, p.S3Puts),
			Owner: s3PrefixPuts.Owner, JobsPerS: s3PrefixPuts.Value / p.S3Puts, Raise: s3PrefixPuts.Raise,
		},
		Limit{
			Key: "live-shards",
			Name: fmt.Sprintf("the Jobs table's live index: %v shards × %v %s, %v index writes per job",
				s.LiveShards.Value, partitionWrites.Value, partitionWrites.Unit, p.LiveWrites),
			Owner:     Ours,
			JobsPerS:  s.LiveShards.Value * livePer,
			Raise:     raiseSetting(s.LiveShards, "LiveShards", "it may only grow; the sweeper queries each shard; the index's sort key (the update time) only grows, so a shard's writes cannot be split for heat"),
			parameter: "LiveShards", perUnit: livePer,
		},
		Limit{
			Key:   "groups",
			Name:  fmt.Sprintf("%s: %d groups, a batch each %v s", fifoGroups.Name, in.Groups, WorkerBatchSeconds),
			Owner: fifoGroups.Owner, JobsPerS: float64(in.Groups) / WorkerBatchSeconds, Raise: fifoGroups.Raise,
		},
		Limit{
			Key:   "api-gateway",
			Name:  fmt.Sprintf("%s in %s, %v %s (%v per job)", apiGatewayRate.Name, in.Region, rq.APIGatewayRate, apiGatewayRate.Unit, p.APIRequests),
			Owner: apiGatewayRate.Owner, JobsPerS: rq.APIGatewayRate / p.APIRequests, Raise: apiGatewayRate.Raise,
		},
		Limit{
			Key: "lambda-concurrency",
			Name: fmt.Sprintf("%s, %v (worker %v s per %v lanes, projector %v s per %v events, intake %v s per job)", lambdaConcurrency.Name, lambdaConcurrency.Value,
				WorkerBatchSeconds, lanes, ProjectorBatchSeconds, s.ProjectorBatch.Value, IntakeSeconds),
			Owner: lambdaConcurrency.Owner,
			JobsPerS: lambdaConcurrency.Value / (WorkerBatchSeconds/lanes*p.Commands +
				ProjectorBatchSeconds/s.ProjectorBatch.Value*p.Events + IntakeSeconds*p.APIRequests),
			Raise: lambdaConcurrency.Raise,
		},
		Limit{
			Key: "sqs-fifo",
			Name: fmt.Sprintf("%s in %s, %v %s: the events queue's sends, %v messages a call, %v per job",
				sqsHighThroughput.Name, in.Region, rq.SQSHighThroughput, sqsHighThroughput.Unit, sqsBatch.Value, p.Events),
			Owner:    sqsHighThroughput.Owner,
			JobsPerS: rq.SQSHighThroughput * sqsBatch.Value / max(p.Events, p.Commands),
			Raise:    sqsHighThroughput.Raise,
		},
	)
	for i := range limits {
		limits[i].JobsPerS = math.Floor(limits[i].JobsPerS)
	}
	slices.SortStableFunc(limits, func(a, b Limit) int { return cmp.Compare(a.JobsPerS, b.JobsPerS) })
	cost, note, err := costOrNote(p, s, in.Region)
	if err != nil {
		return Plan{}, err
	}
	return Plan{
		Region:            in.Region,
		Groups:            in.Groups,
		Tenants:           in.Tenants,
		Limits:            limits,
		PerTenantJobsPerS: math.Floor(limits[0].JobsPerS / float64(in.Tenants)),
		TenantJobsPerS:    math.Floor(tenant.JobsPerS / float64(in.Tenants)),
		PerJob:            p,
		Settings:          s,
		Cost:              cost,
		CostNote:          note,
	}, nil
}

// JSON is the plan for scripts:
// {"limits":[{"name":…,"owner":…,"jobs_per_s":…,"raise":…},…],"per_tenant_jobs_per_s":…,
// "cost_per_million_jobs":{"region":…,"currency":"USD","lines":[…],"by_service":{…},"total_usd":…,"assumptions":[…]},
// "prices_as_of":…}; in a region without prices the cost holds the region and a "note".
func (p Plan) JSON() ([]byte, error) {
	type limit struct {
		Name     string  `json:"name"`
		Owner    Owner   `json:"owner"`
		JobsPerS float64 `json:"jobs_per_s"`
		Raise    string  `json:"raise"`
	}
	out := struct {
		Limits     []limit  `json:"limits"`
		PerTenant  float64  `json:"per_tenant_jobs_per_s"`
		Cost       costJSON `json:"cost_per_million_jobs"`
		PricesAsOf string   `json:"prices_as_of"`
	}{PerTenant: p.PerTenantJobsPerS, Cost: p.costJSON(p.Region), PricesAsOf: PricesAsOf}
	for _, l := range p.Limits {
		out.Limits = append(out.Limits, limit{Name: l.Name, Owner: l.Owner, JobsPerS: l.JobsPerS, Raise: l.Raise})
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("capacity: marshal plan: %w", err)
	}
	return raw, nil
}

// tenantLimit is one tenant's totals: TotalsShards partition-key values,
// each taking its jobs' writes up to the per-value limit and its total
// item's up to the per-item limit, whichever binds first.
func tenantLimit(p PerJob, s Settings) Limit {
	byKey := partitionWrites.Value / p.TotalsKeyWRU
	byItem := itemWrites.Value / p.TotalItemWRU
	perShard := min(byKey, byItem)
	binds := fmt.Sprintf("%s, %v %s, %v per job on one", partitionWrites.Name, partitionWrites.Value, partitionWrites.Unit, p.TotalsKeyWRU)
	if byItem < byKey {
		binds = fmt.Sprintf("%s, %v %s, %v per job on one", itemWrites.Name, itemWrites.Value, itemWrites.Unit, p.TotalItemWRU)
	}
	return Limit{
		Key:       "tenant-totals",
		Name:      fmt.Sprintf("a tenant's totals: %v shards (partition-key values), each bound by %s", s.TotalsShards.Value, binds),
		Owner:     Ours,
		JobsPerS:  s.TotalsShards.Value * perShard,
		parameter: TotalsShardsParameter, perUnit: perShard,
		Raise: raiseSetting(s.TotalsShards, TotalsShardsParameter, "chosen when the Totals table is created, fixed for its life: "+
			"a job's cursor and its share of the total live on the shard its id hashes to, reads sum the shards; concurrent transactions on one total item conflict (retried) before it"),
	}
}

// raiseSetting says how to raise a setting: the parameter that sets it,
// with its bounds; or, where a literal or a constant sets it, that the
// parameter the design names for it (param) is not in the template yet.
// note adds to it.
func raiseSetting(s Setting, param, note string) string {
	if s.Parameter == "" {
		return fmt.Sprintf("the parameter %s, not in the template yet; %s", param, note)
	}
	out := "raise the parameter " + s.Parameter
	if s.Range != "" {
		out += " (" + s.Range + ")"
	}
	return out + "; " + note
}

// The goal of issue 19 on paper: with default settings, at GoalGroups, the
// limits that bind first are AWS quotas a user can raise (Lambda's
// concurrency, API Gateway's rate, a table's maximum), never ours, and one
// tenant alone reaches GoalTenantJobsPerS.
const GoalTenantJobsPerS = 5000

// GoalGroups are the groups in flight the goal is stated at.
var GoalGroups = []int{1000, 100_000}

// goalQuotas are the limits' keys of the raisable AWS quotas the goal
// names: none of ours may allow as few jobs per second as the lowest.
var goalQuotas = []string{"lambda-concurrency", "api-gateway", "jobs-table-max", "totals-table-max", "views-table-max"}

// GoalShortfalls says where the plan misses the goal (none: it holds):
// each limit of ours that allows no more jobs per second than the lowest
// of the raisable AWS quotas the goal names (a tie binds together, so it
// misses too), and one tenant's ceiling below GoalTenantJobsPerS.
func (p Plan) GoalShortfalls() []string {
	var bound *Limit
	for i, l := range p.Limits {
		if slices.Contains(goalQuotas, l.Key) && (bound == nil || l.JobsPerS < bound.JobsPerS) {
			bound = &p.Limits[i]
		}
	}
	var out []string
	for _, l := range p.Limits {
		if l.Owner == Ours && bound != nil && l.JobsPerS <= bound.JobsPerS {
			quota, _, _ := strings.Cut(bound.Name, ",")
			out = append(out, fmt.Sprintf("ours binds at %s jobs/s, not above %s jobs/s (%s): %s%s",
				Commas(l.JobsPerS), Commas(bound.JobsPerS), quota, l.Name, clears(l, bound.JobsPerS+1)))
		}
	}
	if p.TenantJobsPerS < GoalTenantJobsPerS {
		var fix string
		if i := slices.IndexFunc(p.Limits, func(l Limit) bool { return l.Key == "tenant-totals" }); i >= 0 && p.Tenants > 0 {
			one := p.Limits[i]
			one.perUnit /= float64(p.Tenants)
			fix = clears(one, GoalTenantJobsPerS)
		}
		out = append(out, fmt.Sprintf("one tenant reaches %s jobs/s, below %s%s", Commas(p.TenantJobsPerS), Commas(GoalTenantJobsPerS), fix))
	}
	return out
}

// clears says the smallest value of l's parameter at which l allows at
// least want jobs per second (rounded down, as the limits are); "" for a
// limit not in proportion to one setting.
func clears(l Limit, want float64) string {
	if l.perUnit <= 0 {
		return ""
	}
	n := max(1, math.Floor(want/l.perUnit))
	for math.Floor(n*l.perUnit) < want {
		n++
	}
	return fmt.Sprintf(" (%s %s or more clears it)", l.parameter, Num(n))
}

// Commas writes n rounded down to a whole number with thousands
// separators: 28571 is "28,571".
func Commas(n float64) string {
	digits := strconv.FormatFloat(math.Floor(n), 'f', 0, 64)
	neg := strings.HasPrefix(digits, "-")
	digits = strings.TrimPrefix(digits, "-")
	var b strings.Builder
	for i, d := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
