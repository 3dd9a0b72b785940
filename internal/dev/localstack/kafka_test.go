package localstack

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/fifoworker/fifoworker/internal/dev/kafkabroker"
)

// silentListener accepts connections on 127.0.0.1 and holds them open
// without ever answering, until the test ends.
func silentListener(t *testing.T) net.Listener {
	t.Helper()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = silent.Close() })
	go func() {
		for {
			conn, err := silent.Accept()
			if err != nil {
				return
			}
			defer func() { _ = conn.Close() }() // held open, never answered
		}
	}()
	return silent
}

// The broker is ready when it answers a Kafka metadata request and
// advertises the address it was reached at, not when its port merely
// accepts connections.
func TestTheKafkaProbeWantsAMetadataAnswer(t *testing.T) {
	t.Parallel()
	b, err := kafkabroker.New(kafkabroker.Config{})
	require.NoError(t, err)
	defer b.Close()
	require.NoError(t, probe(context.Background(), "kafka", b.Addr(), "eu-west-1"))

	silent := silentListener(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	require.Error(t, probe(ctx, "kafka", silent.Addr().String(), "eu-west-1"), "a port that accepts is not a broker")
}

// lyingListener reports another address than its own, so kfake
// advertises that one.
type lyingListener struct{ net.Listener }

func (lyingListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }

func TestTheKafkaProbeWantsTheBrokerToAdvertiseItself(t *testing.T) {
	t.Parallel()
	var real net.Listener
	c, err := kfake.NewCluster(kfake.Ports(0), kfake.ListenFn(func(network, address string) (net.Listener, error) {
		l, err := net.Listen(network, address)
		real = l
		return lyingListener{l}, err
	}))
	require.NoError(t, err)
	defer c.Close()
	err = probe(context.Background(), "kafka", real.Addr().String(), "eu-west-1")
	require.ErrorContains(t, err, "advertises 127.0.0.1:1")
}

// Beside an external endpoint the stack's one process is its broker:
// status reports it.
func TestStatusReportsTheBrokerBesideAnExternalEndpoint(t *testing.T) {
	t.Parallel()
	o := Options{Name: "ext-broker", CacheDir: t.TempDir()}
	p := liveProcess(t)
	p.Service = "kafka"
	require.NoError(t, save(o, &State{Name: o.Name, Region: "eu-west-1", External: "http://127.0.0.1:4566",
		Kafka: "127.0.0.1:1", Processes: []Process{p}}))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	s, statuses, err := Status(ctx, o)
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:4566", s.External)
	require.Len(t, statuses, 1)
	require.Equal(t, "kafka", statuses[0].Service)
	require.Equal(t, "127.0.0.1:1", statuses[0].Endpoint)
	require.True(t, statuses[0].Running)
	require.Error(t, statuses[0].Err, "nothing answers on 127.0.0.1:1")
}
