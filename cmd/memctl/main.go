// Command memctl is the command-line client of Garden Bloom Memory: every
// command is one or a few calls of the gRPC API (etcdctl / gh / temporal
// style), with -o table|json|yaml output and exit codes scripts can branch
// on. It holds no memory logic of its own; docs/cli.md is its manual.
//
//	memctl login --addr HOST:PORT --token TOKEN   remember the server (0600)
//	memctl init my-agent --template coding-agent  onboard an agent
//	memctl ingest episodes.jsonl --wait           episodes -> proposals -> commits
//	memctl search "flaky test" --expand           BM25 hits + entity-graph neighbours
//	memctl --data-dir ./mem read my-agent         an embedded store, no server to run
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], streams{in: os.Stdin, out: os.Stdout, err: os.Stderr}, os.LookupEnv)
	stop()
	os.Exit(code)
}
