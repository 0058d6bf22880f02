package blob_test

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/garden-bloom/memory/pkg/blob"
)

// cpuTime is the process's user + system CPU time: on the filesystems we
// run on, most of a Put's cost is kernel time that ns/op does not show.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFSPutProposals writes proposal-sized documents as the proposal
// store does under apply load: 16 writers per CPU, 100 agents' directories,
// every key written twice (created, then replaced with its outcome).
func BenchmarkFSPutProposals(b *testing.B) {
	s, err := blob.NewFS(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			b.Error(err)
		}
	}()
	body := bytes.Repeat([]byte("x"), 2000)
	var n atomic.Int64
	b.SetParallelism(16)
	c0 := cpuTime()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			key := fmt.Sprintf("proposals/agent-%03d/p%d.json", i%100, i/2)
			if _, err := s.Put(context.Background(), key, bytes.NewReader(body), int64(len(body)), blob.PutOptions{}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(cpuTime()-c0)/float64(b.N)/1e3, "cpu-µs/op")
}
