package quarantine_test

import (
	"fmt"

	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// Parked messages are read back in key order, and SQS sequence numbers are
// decimal strings of varying length: "10" sorts before "9" as text. The key
// pads them so that a redrive sends the older message first.
func ExampleSeqKey() {
	nine, _ := quarantine.SeqKey("9")
	ten, _ := quarantine.SeqKey("10")
	fmt.Println(nine)
	fmt.Println(ten)
	fmt.Println(nine < ten, quarantine.SeqNumber(ten))

	_, err := quarantine.SeqKey("12a")
	fmt.Println(err != nil)
	// Output:
	// 0000000000000000000000000000000000000009
	// 0000000000000000000000000000000000000010
	// true 10
	// true
}
