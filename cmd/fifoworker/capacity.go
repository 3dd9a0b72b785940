package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/fifoworker/fifoworker/internal/dev/capacity"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

const capacityLong = `The capacity model (docs/CAPACITY.md) computed: the jobs per second each limit
allows, from the requests one job costs (counted by the request tests, committed
in internal/dev/capacity/requests.json), the template's settings (each mapping's
MaximumConcurrency and BatchSize, the worker's storage, the live index's shards
LiveShards, each tenant's totals shards TotalsShards) and AWS's published quotas
for the region. It prints the limits in the order
they bind (fewest jobs per second first), who owns each (ours: a parameter or
the code; aws-adjustable: a quota increase or pre-warming; aws-fixed: only a
design that needs less) and what raises it (for ours, the template parameter),
then the jobs per second each tenant gets when the tenants share the load
evenly. A tenant's own ceiling is its totals': TotalsShards partition-key values,
each bound by DynamoDB's 1,000 write units a second per partition-key value and
per item. docs/CAPACITY.md is generated from the same model. A model on paper, not a
measurement: it assumes a worker batch takes 100 ms, a projector batch 50 ms.

Then the cost of a million jobs at list prices (us-east-1 only: the price
table in internal/dev/capacity/prices.go, dated, each price with its source):
Lambda requests and GB-seconds (arm64) at each function's MemorySize in the
template and the assumed times above, DynamoDB on-demand write and read units,
SQS FIFO requests, S3 PUTs and GETs, API Gateway HTTP API requests, from the
same counted requests, each job alone (an upper bound: batching lowers the
Lambda and SQS lines).

--json prints {"limits":[{"name","owner","jobs_per_s","raise"},...],
"per_tenant_jobs_per_s","cost_per_million_jobs":{"region","currency","lines",
"by_service","total_usd","assumptions"},"prices_as_of"} for scripts (jobs per
second rounded down; USD to 1/100 cent); in another region the cost holds the
region and a "note".

Exit status: 0 done, 1 the template or the counts cannot be read, 2 a usage
error (groups or tenants below 1, a region the model does not know).`

// capacityOptions are `fifoworker capacity`'s.
type capacityOptions struct {
	Input    capacity.Input
	Template string // the SAM template whose settings the model reads
	JSON     bool
}

func (c *cli) capacityCmd() *cobra.Command {
	o := &capacityOptions{}
	cmd := &cobra.Command{
		Use: "capacity", Short: "the limits in the order they bind, in jobs per second, and what raises each", Long: capacityLong,
		Args: noArgs, RunE: c.choose(o, nil),
	}
	fs := cmd.Flags()
	fs.IntVar(&o.Input.Groups, "groups", 1000, "message groups in flight (each job is its own group), at least 1")
	fs.IntVar(&o.Input.Tenants, "tenants", 1, "tenants sharing the load evenly, at least 1")
	fs.StringVar(&o.Input.Region, "region", "us-east-1", "the AWS region (regional quotas differ): one of "+strings.Join(capacity.Regions(), ", "))
	fs.StringVar(&o.Template, "template", "template.yaml", "the SAM template whose settings the model reads")
	fs.BoolVar(&o.JSON, "json", false, "the plan as JSON, for scripts")
	_ = cmd.MarkFlagFilename("template", "yaml", "yml")
	return cmd
}

// Validate refuses groups or tenants below 1 and an unknown region (a
// usage error); the template is read by Run.
func (o *capacityOptions) Validate() error { return o.Input.Validate() }

func (o *capacityOptions) Run(_ context.Context, c *cli) error {
	tpl, err := samtemplate.Load(o.Template)
	if err != nil {
		return err
	}
	settings, err := capacity.SettingsFrom(tpl)
	if err != nil {
		return fmt.Errorf("%s: %w", o.Template, err)
	}
	counts, err := capacity.Counted()
	if err != nil {
		return err
	}
	plan, err := capacity.Compute(counts, settings, o.Input)
	if err != nil {
		return err
	}
	if o.JSON {
		raw, err := plan.JSON()
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(c.stdout, "%s\n", raw)
		return err
	}
	return printPlan(c, o, plan)
}

// printPlan prints the limits as a table, then the settings read and
// where each came from.
func printPlan(c *cli, o *capacityOptions, plan capacity.Plan) error {
	w := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "%d groups, %d tenants, %s\n\n", o.Input.Groups, o.Input.Tenants, o.Input.Region)
	fmt.Fprintln(w, "#\tjobs/s\towner\tlimit\tto go past it")
	for i, l := range plan.Limits {
		fmt.Fprintf(w, "%d\t%.0f\t%s\t%s\t%s\n", i+1, l.JobsPerS, l.Owner, l.Name, l.Raise)
	}
	fmt.Fprintf(w, "\nper tenant: %.0f jobs/s\n\nsettings (%s):\n", plan.PerTenantJobsPerS, o.Template)
	for _, s := range plan.Settings.List() {
		fmt.Fprintf(w, "  %s\t%v\t%s\n", s.Name, s.Value, s.Source)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return printCost(c, plan)
}

// printCost prints the cost of a million jobs line by line, by service is
// in the lines' first column; or the note of a region without prices.
func printCost(c *cli, plan capacity.Plan) error {
	if plan.Cost == nil {
		_, err := fmt.Fprintf(c.stdout, "\ncost: %s\n", plan.CostNote)
		return err
	}
	w := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	num := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
	fmt.Fprintf(w, "\ncost of a million jobs at %s list prices (read %s), USD:\n", plan.Cost.Region, capacity.PricesAsOf)
	for _, l := range plan.Cost.Lines {
		fmt.Fprintf(w, "  %s\t%s\t%s %s\t× %s per %s\t= %.4f\n", l.Service, l.Item, num(math.Round(l.Quantity*1000)/1000), l.Unit, num(l.PriceUSD), num(l.PricePer), capacity.RoundUSD(l.USD))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	byService := plan.Cost.ByService()
	var seen, services []string
	for _, l := range plan.Cost.Lines {
		if !slices.Contains(seen, l.Service) {
			seen = append(seen, l.Service)
			services = append(services, fmt.Sprintf("%s %.4f", l.Service, capacity.RoundUSD(byService[l.Service])))
		}
	}
	fmt.Fprintf(c.stdout, "by service: %s\ntotal: %.4f\n", strings.Join(services, ", "), capacity.RoundUSD(plan.Cost.TotalUSD))
	fmt.Fprintln(c.stdout, "assumptions:")
	for _, a := range capacity.CostAssumptions {
		fmt.Fprintf(c.stdout, "  - %s\n", a)
	}
	_, err := fmt.Fprintln(c.stdout, "prices: internal/dev/capacity/prices.go, each with its source and what was read (\"unconfirmed on AWS's page\" where only third-party pages gave the figure)")
	return err
}
