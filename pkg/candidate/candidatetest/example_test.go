package candidatetest_test

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/fifoworker/fifoworker/pkg/candidate/candidatetest"
)

// A Disk fills at its size as a full /tmp does: the write that does not fit
// writes what does and fails with ENOSPC, and closing a file frees its
// bytes. candidate.Config.Spool takes it in a test of a candidate larger
// than the function's ephemeral storage.
func ExampleDisk() {
	disk, err := candidatetest.NewDisk(candidatetest.DiskConfig{Size: 8})
	if err != nil {
		panic(err)
	}
	f, err := disk.Create()
	if err != nil {
		panic(err)
	}
	n, err := f.Write([]byte("0123456789"))
	fmt.Println(n, errors.Is(err, syscall.ENOSPC), disk.Stats().Used)
	if err := f.Close(); err != nil {
		panic(err)
	}
	fmt.Println(disk.Stats().Used, disk.Stats().Full)
	// Output:
	// 8 true 8
	// 0 1
}
