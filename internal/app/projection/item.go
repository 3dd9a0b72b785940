package projection

import (
	"fmt"
	"strconv"

	"github.com/fifoworker/fifoworker/internal/base/ddbitem"
)

// decodeErr is d's first problem as the package's decoding error, or nil.
func decodeErr(d *ddbitem.Decoder) error {
	if err := d.Err(); err != nil {
		return fmt.Errorf("projection: decode item: %w", err)
	}
	return nil
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
