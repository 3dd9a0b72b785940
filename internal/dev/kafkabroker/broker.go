package kafkabroker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kfake"
)

// ErrInvalidConfig marks a Config that New refuses; the error names the
// field.
var ErrInvalidConfig = errors.New("kafkabroker: invalid configuration")

// host is the only address the broker listens on and advertises.
const host = "127.0.0.1"

// Config is a broker's configuration.
type Config struct {
	// Port is the TCP port it listens on, on 127.0.0.1 (default 0: a free
	// one the kernel picks; Addr says which).
	Port int
	// DefaultPartitions is the partition count of a topic whose
	// CreateTopics leaves it to the broker (NumPartitions -1) (default 1:
	// Apache Kafka's num.partitions, which MSK's default configuration
	// keeps). kfake's own default, 10, is no cluster's.
	DefaultPartitions int
	// Logger receives where the broker listens, when it stops, and kfake's
	// own lines at the logger's level: warnings and errors, group joins at
	// info, a line per request at debug (nil: discard).
	Logger *slog.Logger
}

// Validate reports what is wrong with c, if anything.
func (c Config) Validate() error {
	if c.Port < 0 || c.Port > 65535 {
		return fmt.Errorf("%w: Port %d is not 0 (a free one) to 65535", ErrInvalidConfig, c.Port)
	}
	if c.DefaultPartitions < 0 {
		return fmt.Errorf("%w: DefaultPartitions %d is negative", ErrInvalidConfig, c.DefaultPartitions)
	}
	return nil
}

// Broker is a running one-broker Kafka cluster on 127.0.0.1.
type Broker struct {
	cluster *kfake.Cluster
	addr    string
	log     *slog.Logger
}

// New starts a broker listening on 127.0.0.1:cfg.Port. A port in use is
// an error that names the address.
func New(cfg Config) (*Broker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	partitions := cfg.DefaultPartitions
	if partitions == 0 {
		partitions = 1
	}
	addr := net.JoinHostPort(host, strconv.Itoa(cfg.Port))
	cluster, err := kfake.NewCluster(
		kfake.Ports(cfg.Port), // one port: one broker
		kfake.ListenFn(listenOnLoopback),
		kfake.DefaultNumPartitions(partitions),
		kfake.ClusterID("fifoworker-local"),
		kfake.WithLogger(logger{log}),
		// No AllowAutoTopicCreation and no SeedTopics: topics exist once
		// created, as on MSK (auto.create.topics.enable=false).
	)
	if err != nil {
		return nil, fmt.Errorf("kafkabroker: listen on %s: %w", addr, err)
	}
	b := &Broker{cluster: cluster, addr: cluster.ListenAddrs()[0], log: log}
	log.Info("kafka broker listening", "addr", b.addr, "default_partitions", partitions)
	return b, nil
}

// listenOnLoopback listens on 127.0.0.1 whatever host it is asked for:
// kfake listens on 127.0.0.1 today, and the broker must not follow it
// elsewhere, since what it listens on is what it advertises.
func listenOnLoopback(network, address string) (net.Listener, error) {
	_, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	return net.Listen(network, net.JoinHostPort(host, port))
}

// Addr is the broker's host:port, its clients' bootstrap servers.
func (b *Broker) Addr() string { return b.addr }

// Run serves until ctx ends, then closes the broker. Its records, in
// memory, are gone with it.
func (b *Broker) Run(ctx context.Context) error {
	<-ctx.Done()
	b.Close()
	b.log.Info("kafka broker stopped", "addr", b.addr)
	return nil
}

// Close stops the broker: its listener first, then the cluster. Closing
// twice is harmless.
func (b *Broker) Close() { b.cluster.Close() }

// logger hands kfake's log lines to slog.
type logger struct{ log *slog.Logger }

func (l logger) Logf(level kfake.LogLevel, format string, args ...any) {
	var lv slog.Level
	switch level {
	case kfake.LogLevelError:
		lv = slog.LevelError
	case kfake.LogLevelWarn:
		lv = slog.LevelWarn
	case kfake.LogLevelInfo:
		lv = slog.LevelInfo
	default:
		lv = slog.LevelDebug
	}
	if !l.log.Enabled(context.Background(), lv) {
		return // its debug lines are one per request: format none that is not wanted
	}
	l.log.Log(context.Background(), lv, fmt.Sprintf(format, args...))
}
