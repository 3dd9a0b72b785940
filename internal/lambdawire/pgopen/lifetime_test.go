package pgopen_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/lambdawire/pgopen"
)

// dialCounter is a driver.Connector that counts its connections.
type dialCounter struct{ dials atomic.Int64 }

func (d *dialCounter) Connect(context.Context) (driver.Conn, error) {
	d.dials.Add(1)
	return fakeConn{}, nil
}
func (d *dialCounter) Driver() driver.Driver { return nil }

type fakeConn struct{}

func (fakeConn) Prepare(string) (driver.Stmt, error) { return nil, errors.New("not supported") }
func (fakeConn) Close() error                        { return nil }
func (fakeConn) Begin() (driver.Tx, error)           { return nil, errors.New("not supported") }
func (fakeConn) Ping(context.Context) error          { return nil }

// A pooled connection is reused until it is MaxConnLifetime old, and not
// after: the next statement dials a new one, with a new IAM token, before
// RDS Proxy's idle client timeout (30 minutes by default) can have closed
// the old one, which has been idle no longer than it has lived.
func TestAPooledConnectionIsReplacedAtItsLifetime(t *testing.T) {
	t.Parallel()
	require.Less(t, pgopen.MaxConnLifetime, 30*time.Minute, "under RDS Proxy's default IdleClientTimeout")
	synctest.Test(t, func(t *testing.T) {
		dc := &dialCounter{}
		db := sql.OpenDB(dc)
		defer func() { _ = db.Close() }()
		pgopen.Bound(db, 1)
		require.NoError(t, db.PingContext(t.Context()))
		time.Sleep(pgopen.MaxConnLifetime)
		require.NoError(t, db.PingContext(t.Context()))
		require.EqualValues(t, 1, dc.dials.Load(), "reused at exactly its lifetime")
		time.Sleep(time.Nanosecond)
		require.NoError(t, db.PingContext(t.Context()))
		require.EqualValues(t, 2, dc.dials.Load(), "replaced past its lifetime")
		require.EqualValues(t, 1, db.Stats().MaxLifetimeClosed)
	})
}
