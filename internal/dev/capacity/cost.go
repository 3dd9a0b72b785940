package capacity

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
)

// RelayInvocationSeconds is the relay's time per invocation, assumed equal
// to t_p (ProjectorBatchSeconds): a stream batch decoded and one
// SendMessageBatch. An assumption (the relay measured 4 ms a batch on the
// local emulators), and so is intake's.
const RelayInvocationSeconds = ProjectorBatchSeconds

// million is the number of jobs a cost is for.
const million = 1e6

// CostAssumptions say what the cost of a million jobs assumes and leaves
// out; they are printed with it.
var CostAssumptions = []string{
	"each job alone, as requests.json counts it: every message its own invocation and its own SQS call, an upper bound; " +
		"when busy, batches of up to 10 cut the Lambda requests, their GB-seconds per job and the SQS calls (DynamoDB, S3 and API Gateway stay)",
	fmt.Sprintf("Lambda time per invocation: intake %v s (assumed), worker t_w %v s and projector t_p %v s (measured at 512 MB on the local emulators), relay %v s (as t_p); "+
		"memory is each function's MemorySize in the template, not a measured need", IntakeSeconds, WorkerBatchSeconds, ProjectorBatchSeconds, RelayInvocationSeconds),
	"DynamoDB: items under 1 KB (1 write unit a write, 2 in a transaction), index writes included (live and finished); " +
		"each counted read 1 read unit; the projector's holds read (one per batch, left out of requests.json) adds at most 1 read unit per event",
	"SQS: the relay's sends as counted plus Lambda's pollers' receive and delete, one each per message; each call's payload under 64 KB; " +
		"idle long polls (empty receives) left out",
	"S3: no GetObject on the counted path (clients' reads of results are theirs); " +
		"left out: storage, data transfer, CloudWatch (logs, EMF metrics), X-Ray traces, the worker's ephemeral storage above 512 MB, free tiers",
}

// CostLine is one priced item of the cost of a million jobs.
type CostLine struct {
	Key      string // the price's key, e.g. "s3-puts"
	Service  string
	Item     string
	Quantity float64 // units per million jobs
	Unit     string
	PriceUSD float64 // the price: PriceUSD for PricePer units
	PricePer float64
	USD      float64 // Quantity at the price
}

// Cost is the cost of a million jobs at a region's list prices.
type Cost struct {
	Region   string
	Lines    []CostLine
	TotalUSD float64
}

// ByService is the lines' cost added up by service.
func (c Cost) ByService() map[string]float64 {
	out := map[string]float64{}
	for _, l := range c.Lines {
		out[l.Service] += l.USD
	}
	return out
}

// costPerMillionJobs prices what one job costs (p) and the template's
// memory sizes (s) at region's list prices; ErrNoPrices for a region the
// table does not have.
func costPerMillionJobs(p PerJob, s Settings, region string) (*Cost, error) {
	table, err := PricesFor(region)
	if err != nil {
		return nil, err
	}
	messages := p.Commands + p.Events // one relay invocation and one SendMessageBatch each, alone
	invocations := []struct {
		n, seconds float64
		memory     Setting
	}{
		{p.APIRequests, IntakeSeconds, s.IntakeMemoryMB},
		{p.Commands, WorkerBatchSeconds, s.WorkerMemoryMB},
		{p.Events, ProjectorBatchSeconds, s.ProjectorMemoryMB},
		{messages, RelayInvocationSeconds, s.RelayMemoryMB},
	}
	var requests, gbSeconds float64
	for _, inv := range invocations {
		requests += inv.n
		gbSeconds += inv.n * inv.seconds * inv.memory.Value / 1024
	}
	perJob := map[string]float64{
		"lambda-requests":      requests,
		"lambda-gb-seconds":    gbSeconds,
		"dynamodb-writes":      p.JobsWRU + p.TotalsWRU + p.ViewsWRU + p.LiveWrites + p.FinishedWrites,
		"dynamodb-reads":       p.ReadUnits,
		"sqs-fifo-requests":    3 * messages, // a send, a receive, a delete
		"s3-puts":              p.S3Puts,
		"s3-gets":              0,
		"api-gateway-requests": p.APIRequests,
	}
	if len(perJob) != len(table) {
		return nil, fmt.Errorf("%w: the price table has %d prices, the cost %d lines", ErrInvalid, len(table), len(perJob))
	}
	c := &Cost{Region: region}
	for _, price := range table {
		q, ok := perJob[price.Key]
		if !ok {
			return nil, fmt.Errorf("%w: price %s: the cost has no line for it (lines: %v)", ErrInvalid, price.Key, slices.Sorted(maps.Keys(perJob)))
		}
		l := CostLine{
			Key: price.Key, Service: price.Service, Item: price.Item, Unit: price.Unit, Quantity: q * million,
			PriceUSD: price.USD, PricePer: price.Per,
		}
		l.USD = l.Quantity * price.USD / price.Per
		c.Lines = append(c.Lines, l)
		c.TotalUSD += l.USD
	}
	return c, nil
}

// costOrNote is the plan's cost, or the note that says why there is none.
func costOrNote(p PerJob, s Settings, region string) (*Cost, string, error) {
	c, err := costPerMillionJobs(p, s, region)
	if errors.Is(err, ErrNoPrices) {
		return nil, err.Error() + " (run with --region " + pricesRegion + " for its list prices; other regions' prices differ)", nil
	}
	return c, "", err
}

// costJSON is "cost_per_million_jobs" of the plan's JSON: the lines, the
// cost by service and in all (USD rounded to 1/100 cent), the
// assumptions; or, in a region without prices, the region and a note.
type costJSON struct {
	Region      string             `json:"region"`
	Currency    string             `json:"currency,omitempty"`
	Lines       []costLineJSON     `json:"lines,omitempty"`
	ByService   map[string]float64 `json:"by_service,omitempty"`
	TotalUSD    float64            `json:"total_usd,omitempty"`
	Assumptions []string           `json:"assumptions,omitempty"`
	Note        string             `json:"note,omitempty"`
}

type costLineJSON struct {
	Service  string  `json:"service"`
	Item     string  `json:"item"`
	Quantity float64 `json:"quantity"`
	Unit     string  `json:"unit"`
	PriceUSD float64 `json:"price_usd"`
	PricePer float64 `json:"price_per"`
	USD      float64 `json:"usd"`
}

func (p Plan) costJSON(region string) costJSON {
	if p.Cost == nil {
		return costJSON{Region: region, Note: p.CostNote}
	}
	out := costJSON{Region: p.Cost.Region, Currency: "USD", ByService: map[string]float64{}, TotalUSD: RoundUSD(p.Cost.TotalUSD), Assumptions: CostAssumptions}
	for _, l := range p.Cost.Lines {
		out.Lines = append(out.Lines, costLineJSON{
			Service: l.Service, Item: l.Item, Quantity: math.Round(l.Quantity*1000) / 1000, Unit: l.Unit,
			PriceUSD: l.PriceUSD, PricePer: l.PricePer, USD: RoundUSD(l.USD),
		})
	}
	for svc, usd := range p.Cost.ByService() {
		out.ByService[svc] = RoundUSD(usd)
	}
	return out
}

// RoundUSD rounds to 1/100 of a cent: the prices' own precision per
// million jobs is no finer.
func RoundUSD(usd float64) float64 { return math.Round(usd*1e4) / 1e4 }
