// Command memoryd runs Garden Bloom Memory: the four gRPC services and the
// REST edge, all in one process (--target=all) or one target per process.
//
//	memoryd [flags]                  serve (see --help)
//	memoryd token --sub S --role R   print a bearer token
//	memoryd publish-read-state       build and publish the read state, then stop
//	memoryd version                  print the version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/garden-bloom/memory/cmd/memoryd/app"
	"github.com/garden-bloom/memory/pkg/telemetry"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "token":
			return exitCode(app.TokenCommand(args[1:], os.LookupEnv, stdout), stderr)
		case "publish-read-state":
			return exitCode(publishReadState(args[1:], stderr), stderr)
		case "version":
			_, err := fmt.Fprintln(stdout, app.Version)
			return exitCode(err, stderr)
		}
	}
	return exitCode(serve(args, stderr), stderr)
}

func serve(args []string, stderr io.Writer) error {
	return withApp(args, stderr, nil, (*app.App).Run)
}

// publishReadState runs the one-off job of app.PublishReadState with the
// serve flags (data dir, object store, config file).
func publishReadState(args []string, stderr io.Writer) error {
	return withApp(args, stderr, app.ConfigurePublish, (*app.App).PublishReadState)
}

// withApp loads the config from args (configure, if any, adjusts it),
// logs to stderr, and runs the app with run until it returns or a signal
// stops it.
func withApp(args []string, stderr io.Writer, configure func(*app.Config) error, run func(*app.App, context.Context) error) error {
	cfg, flags, err := app.LoadConfig(args, os.LookupEnv)
	if err != nil {
		return err
	}
	if configure != nil {
		if err := configure(cfg); err != nil {
			return err
		}
	}
	level, err := telemetry.ParseLevel(cfg.LogLevel)
	if err != nil {
		return err
	}
	logger, closeLog := telemetry.NewBufferedLogger(stderr, level)
	defer func() { _ = closeLog() }() // the last lines; a log that cannot be written has nowhere to say so
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	a, err := app.New(ctx, cfg, flags, logger)
	if err != nil {
		return err
	}
	return run(a, ctx)
}

func exitCode(err error, stderr io.Writer) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	default:
		_, _ = fmt.Fprintln(stderr, "memoryd:", err) // nowhere left to report a failure to
		return 1
	}
}
