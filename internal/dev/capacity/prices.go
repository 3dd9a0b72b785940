package capacity

import (
	"errors"
	"fmt"
	"slices"
)

// ErrNoPrices is returned for a region the price table has no prices for.
var ErrNoPrices = errors.New("capacity: no list prices for the region")

// PricesAsOf is the day the prices below were read.
const PricesAsOf = "2026-12-02"

// pricesRegion is the one region the price table holds: AWS's pricing pages
// render their regional tables in the browser, and the copies we could read
// give us-east-1's figures only.
const pricesRegion = "us-east-1"

// Price is one list price: USD for Per units of Unit.
type Price struct {
	Key     string // the cost line it prices, e.g. "s3-puts"
	Service string // lambda, dynamodb, sqs, s3, api-gateway
	Item    string
	Unit    string
	USD     float64
	Per     float64
	Source  string // AWS's pricing page for it
	ReadOn  string // the day it was read (PricesAsOf)
	// Read is what was read and where: AWS's pricing pages fill their
	// price tables in the browser, so the stored copies we searched hold
	// the page's text without the figure; where only third-party pages
	// (dated) state it, Read says so and the figure is unconfirmed on
	// AWS's page.
	Read string
}

// The first tier of each price in us-east-1, on-demand, no free tier (a
// million jobs is past every free tier that matters for a plan).
var prices = []Price{{
	Key: "lambda-gb-seconds", Service: "lambda", Item: "duration, arm64 (first 7.5 billion GB-s a month)", Unit: "GB-s",
	USD: 0.0000133334, Per: 1, ReadOn: PricesAsOf, Source: "https://aws.amazon.com/lambda/pricing/",
	Read: "AWS's page: duration is billed per GB-s by memory and architecture, its table not in the copy read; " +
		"the figure from third-party pages (cloudchipr.com 2024, a Lambda cost note of 2026-05): unconfirmed on AWS's page",
}, {
	Key: "lambda-requests", Service: "lambda", Item: "requests", Unit: "requests",
	USD: 0.20, Per: 1e6, ReadOn: PricesAsOf, Source: "https://aws.amazon.com/lambda/pricing/",
	Read: "AWS's page: a request is counted each time a function starts in response to an event or invoke; " +
		"$0.20 per million from third-party pages (same as x86): unconfirmed on AWS's page",
}, {
	Key: "dynamodb-writes", Service: "dynamodb", Item: "on-demand write request units (Standard table class)", Unit: "WRU",
	USD: 0.625, Per: 1e6, ReadOn: PricesAsOf, Source: "https://aws.amazon.com/dynamodb/pricing/on-demand/",
	Read: "AWS's News Blog (on-demand post, updated 2025-01-31) notes the reduced on-demand prices without the figure; " +
		"$0.625 per million WRU from a third-party page (airbyte.com): unconfirmed on AWS's page",
}, {
	Key: "dynamodb-reads", Service: "dynamodb", Item: "on-demand read request units (Standard table class)", Unit: "RRU",
	USD: 0.125, Per: 1e6, ReadOn: PricesAsOf, Source: "https://aws.amazon.com/dynamodb/pricing/on-demand/",
	Read: "as the write units: $0.125 per million RRU from a third-party page (airbyte.com); AWS's whitepaper " +
		"\"How AWS Pricing Works\" gives the units (a strongly consistent read up to 4 KB is 1 RRU), not the price: unconfirmed on AWS's page",
}, {
	Key: "sqs-fifo-requests", Service: "sqs", Item: "FIFO requests (first 100 billion a month), each 64 KB chunk of a payload one request", Unit: "requests",
	USD: 0.50, Per: 1e6, ReadOn: PricesAsOf, Source: "https://aws.amazon.com/sqs/pricing/",
	Read: "third-party pages (cloudburn.io 2026-03, factualminds.com 2026-06, unanswered.io) agree on $0.50 per million FIFO requests " +
		"and the 64 KB chunk: unconfirmed on AWS's page",
}, {
	Key: "s3-puts", Service: "s3", Item: "S3 Standard PUT, COPY, POST, LIST requests", Unit: "requests",
	USD: 0.005, Per: 1000, ReadOn: PricesAsOf, Source: "https://aws.amazon.com/s3/pricing/",
	Read: "AWS's page lists request prices below the storage table, not in the copy read; $0.005 per 1,000 from third-party pages " +
		"(c3x.dev, cloudkaramchari.com): unconfirmed on AWS's page",
}, {
	Key: "s3-gets", Service: "s3", Item: "S3 Standard GET, SELECT and other requests", Unit: "requests",
	USD: 0.0004, Per: 1000, ReadOn: PricesAsOf, Source: "https://aws.amazon.com/s3/pricing/",
	Read: "as the PUTs: $0.0004 per 1,000 from a third-party page (c3x.dev): unconfirmed on AWS's page",
}, {
	Key: "api-gateway-requests", Service: "api-gateway", Item: "HTTP API requests (first 300 million a month, each 512 KB one request)", Unit: "requests",
	USD: 1.00, Per: 1e6, ReadOn: PricesAsOf, Source: "https://aws.amazon.com/api-gateway/pricing/",
	Read: "AWS's page: HTTP APIs are billed per call received (its free tier text read), the rate table not in the copy read; " +
		"$1.00 per million for the first 300 million from several third-party pages (apigatewaycost.com, learnaws.org): unconfirmed on AWS's page",
}}

// Prices returns the price table (us-east-1).
func Prices() []Price { return slices.Clone(prices) }

// PricesFor returns region's prices, or ErrNoPrices: the table holds
// us-east-1 only, and another region's prices differ.
func PricesFor(region string) ([]Price, error) {
	if region != pricesRegion {
		return nil, fmt.Errorf("%w: %s: the price table has %s only", ErrNoPrices, region, pricesRegion)
	}
	return Prices(), nil
}
