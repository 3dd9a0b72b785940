package lanes_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/lanes"
)

type (
	sqsMark   struct{}
	kafkaMark struct{}
)

// A permanent mark is its processor's: each processor's IsPermanent finds
// its own mark through wrapping, and not another's.
func TestAPermanentMarkIsItsProcessors(t *testing.T) {
	cause := errors.New("malformed")
	err := fmt.Errorf("worker: %w", lanes.Permanent[sqsMark](cause))
	assert.True(t, lanes.IsPermanent[sqsMark](err))
	assert.False(t, lanes.IsPermanent[kafkaMark](err))
	assert.ErrorIs(t, err, cause)
	assert.EqualError(t, err, "worker: permanent: malformed")
	assert.NoError(t, lanes.Permanent[sqsMark](nil))
	assert.False(t, lanes.IsPermanent[sqsMark](cause))
}

func TestPointersNamesTheItemsInOrder(t *testing.T) {
	items := []string{"a", "b", "c"}
	got := lanes.Pointers(items, []int{2, 0})
	require.Len(t, got, 2)
	assert.Same(t, &items[2], got[0])
	assert.Same(t, &items[0], got[1])
	assert.Nil(t, lanes.Pointers(items, nil), "no items: nil, as a re-hold names none")
}
