package quarantinetest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

func testParkInvalid(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	bad := func(n int, sequence string) quarantine.Parked {
		p := item(n)
		p.Sequence = sequence
		return p
	}
	other := item(2)
	other.Group = "other"
	cases := map[string]struct {
		queue, group string
		items        []quarantine.Parked
	}{
		"no queue":                   {"", "g", items(1)},
		"no group":                   {b.queue, "", items(1)},
		"a sequence number":          {b.queue, "g", []quarantine.Parked{bad(1, "1")}},
		"an empty sequence":          {b.queue, "g", []quarantine.Parked{bad(1, "")}},
		"41 digits":                  {b.queue, "g", []quarantine.Parked{bad(1, "0"+seq(1))}},
		"not digits":                 {b.queue, "g", []quarantine.Parked{bad(1, seq(1)[:39]+"a")}},
		"out of order":               {b.queue, "g", items(2, 1)},
		"twice":                      {b.queue, "g", items(1, 1)},
		"a message of another group": {b.queue, "g", []quarantine.Parked{item(1), other}},
	}
	for name, c := range cases {
		_, err := b.store.Park(b.ctx, c.queue, c.group, c.items, true, "boom", b.tick())
		require.Error(t, err, name)
		for _, sentinel := range []error{quarantine.ErrConflict, quarantine.ErrNoHold, quarantine.ErrNotParked} {
			require.NotErrorIs(t, err, sentinel, name)
		}
		_, err = b.store.Hold(b.ctx, b.queue, "g")
		require.ErrorIs(t, err, quarantine.ErrNoHold, "%s: an invalid park wrote a hold", name)
		require.Empty(t, b.messages(t, "g", ""), name)
	}
	b.park(t, "g", true, "boom", 1)
}

func testCancelled(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	b.park(t, "g", true, "boom", 1, 2)
	b.redrive(t, "g")
	groups := []string{"g", "new"}
	before := b.snapshot(t, groups...)
	ctx, cancel := context.WithCancel(b.ctx)
	cancel()
	now := b.tick()
	calls := map[string]func() error{
		"Park": func() error {
			_, err := b.store.Park(ctx, b.queue, "new", items(1), true, "boom", now)
			return err
		},
		"ParkMore": func() error {
			_, err := b.store.Park(ctx, b.queue, "g", items(3), false, "", now)
			return err
		},
		"Done": func() error { _, err := b.store.Done(ctx, b.queue, "g", seq(1), 1, now); return err },
		"Discard": func() error {
			_, err := b.store.Discard(ctx, b.queue, "g", seq(2), now)
			return err
		},
		"BeginRedrive": func() error { _, err := b.store.BeginRedrive(ctx, b.queue, "g", now); return err },
		"Hold":         func() error { _, err := b.store.Hold(ctx, b.queue, "g"); return err },
		"Messages": func() error {
			_, err := b.store.Messages(ctx, b.queue, "g", "", "", 0)
			return err
		},
		"Holds": func() error { _, err := b.store.Holds(ctx, b.queue); return err },
		"Read": func() error {
			_, _, err := b.store.Read(ctx, b.queue, []string{"g"}, []quarantine.ItemKey{{Group: "g", Sequence: seq(1)}})
			return err
		},
	}
	for name, call := range calls {
		require.ErrorIs(t, call(), context.Canceled, name)
	}
	require.Equal(t, before, b.snapshot(t, groups...), "a cancelled call wrote")
}
