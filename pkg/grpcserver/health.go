package grpcserver

import (
	"context"
	"sync/atomic"

	"google.golang.org/grpc/health"
	healthgrpc "google.golang.org/grpc/health/grpc_health_v1"
)

// drainingHealth ends Watch streams once shutdown has begun.
//
// health.Server.Watch only returns when the client goes away, and
// GracefulStop waits for every open stream, so a single watcher (e.g. gRPC
// client-side health checking) would otherwise turn every graceful shutdown
// into a forced one at the deadline. Each watcher is first sent its final
// NOT_SERVING (or SERVICE_UNKNOWN) status, then the stream ends with OK.
type drainingHealth struct {
	*health.Server
	stopping <-chan struct{}
}

func (h *drainingHealth) Watch(req *healthgrpc.HealthCheckRequest, stream healthgrpc.Health_WatchServer) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	ws := &watchStream{Health_WatchServer: stream, ctx: ctx, cancel: cancel, stopping: h.stopping}
	ws.lastSent.Store(-1)

	go func() {
		select {
		case <-ctx.Done():
		case <-h.stopping:
			// health.Shutdown queued NOT_SERVING for known services before
			// stopping was closed. If the watcher already has a terminal
			// status nothing more will be sent, so end now; otherwise the
			// pending update's Send ends the stream (see watchStream.Send).
			if last := ws.lastSent.Load(); last >= 0 && !isServing(last) {
				cancel()
			}
		}
	}()

	err := h.Server.Watch(req, ws)
	select {
	case <-h.stopping:
		return nil // a clean end of stream tells the client we are going away
	default:
		return err
	}
}

func isServing(s int32) bool {
	return healthgrpc.HealthCheckResponse_ServingStatus(s) == healthgrpc.HealthCheckResponse_SERVING
}

type watchStream struct {
	healthgrpc.Health_WatchServer
	ctx      context.Context
	cancel   context.CancelFunc
	stopping <-chan struct{}
	lastSent atomic.Int32
}

func (w *watchStream) Context() context.Context { return w.ctx }

func (w *watchStream) Send(resp *healthgrpc.HealthCheckResponse) error {
	err := w.Health_WatchServer.Send(resp)
	w.lastSent.Store(int32(resp.GetStatus()))
	select {
	case <-w.stopping:
		if resp.GetStatus() != healthgrpc.HealthCheckResponse_SERVING {
			w.cancel()
		}
	default:
	}
	return err
}
