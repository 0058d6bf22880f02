package grpcserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthgrpc "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// RequestIDHeader is the metadata key carrying the request id. Clients may
// send it; the server returns it in the response header on success and in
// the trailer on failure (see unaryRequestID for why).
const RequestIDHeader = "x-request-id"

// maxRequestIDLen bounds caller-supplied ids; they end up in every log line.
const maxRequestIDLen = 128

type requestIDKey struct{}

// RequestIDFromContext returns the request id set by the server's request-id
// interceptor, or "" outside a gRPC call.
func RequestIDFromContext(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

func contextWithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// incomingRequestID adopts the caller's id so a request can be followed
// across services, but only if it is short printable ASCII: anything else
// could be used to forge or break log lines, and is replaced.
func incomingRequestID(ctx context.Context) string {
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get(RequestIDHeader); len(v) > 0 && validRequestID(v[0]) {
			return v[0]
		}
	}
	return newRequestID()
}

func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// unaryRequestID is first in the chain so every later interceptor sees the id.
//
// The id goes into the response header for successful calls but into the
// trailer for failed ones: any header metadata turns an error response into
// headers+trailers instead of "Trailers-Only", and gRPC clients never retry
// a call once response headers arrived, which would silently disable the
// UNAVAILABLE retry policy of Dial.
func unaryRequestID(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	id := incomingRequestID(ctx)
	resp, err := handler(contextWithRequestID(ctx, id), req)
	md := metadata.Pairs(RequestIDHeader, id)
	// SetHeader fails if the handler already sent headers; the trailer is
	// then the only place left.
	if err != nil || grpc.SetHeader(ctx, md) != nil {
		_ = grpc.SetTrailer(ctx, md)
	}
	return resp, err
}

func streamRequestID(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	id := incomingRequestID(ss.Context())
	ws := &requestIDStream{
		ServerStream: ss,
		ctx:          contextWithRequestID(ss.Context(), id),
		md:           metadata.Pairs(RequestIDHeader, id),
	}
	err := handler(srv, ws)
	if !ws.headerSent {
		if err != nil || ss.SetHeader(ws.md) != nil {
			ss.SetTrailer(ws.md)
		}
	}
	return err
}

// requestIDStream adds the request id to the header when the handler first
// sends something, so long-lived streams get it early, and otherwise leaves
// the decision to streamRequestID (same header/trailer rule as unary).
// Like grpc.ServerStream it is not safe for concurrent sends.
type requestIDStream struct {
	grpc.ServerStream
	ctx        context.Context
	md         metadata.MD
	headerSent bool
}

func (s *requestIDStream) Context() context.Context { return s.ctx }

func (s *requestIDStream) SendHeader(md metadata.MD) error {
	s.headerSent = true
	return s.ServerStream.SendHeader(metadata.Join(md, s.md))
}

func (s *requestIDStream) SendMsg(m any) error {
	if !s.headerSent {
		s.headerSent = true
		_ = s.SetHeader(s.md) // fails only if headers already went out
	}
	return s.ServerStream.SendMsg(m)
}

// errInternal is what clients see for a panic: details stay in the server
// log, since a panic message may contain data the caller must not see.
var errInternal = status.Error(codes.Internal, "internal error")

func (s *Server) unaryRecovery(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	start := time.Now()
	defer func() {
		if r := recover(); r != nil {
			s.handlePanic(ctx, info.FullMethod, start, r)
			resp, err = nil, errInternal
		}
	}()
	return handler(ctx, req)
}

func (s *Server) streamRecovery(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	start := time.Now()
	defer func() {
		if r := recover(); r != nil {
			s.handlePanic(ss.Context(), info.FullMethod, start, r)
			err = errInternal
		}
	}()
	return handler(srv, ss)
}

// handlePanic logs the panic with its stack and counts it. Recovery sits
// outside the logging interceptor, so this line is also the call's access
// log entry and carries the same fields.
func (s *Server) handlePanic(ctx context.Context, method string, start time.Time, r any) {
	s.logger.LogAttrs(ctx, slog.LevelError, "grpc handler panic",
		slog.String("method", method),
		slog.String("code", codes.Internal.String()),
		durationAttr(start),
		slog.String("request_id", RequestIDFromContext(ctx)),
		slog.String("peer", peerAddr(ctx)),
		slog.String("panic", fmt.Sprint(r)),
		slog.String("stack", string(debug.Stack())),
	)
	service, name := splitMethod(method)
	s.panics.Add(ctx, 1, metric.WithAttributes(
		attribute.String("rpc.service", service),
		attribute.String("rpc.method", name),
	))
}

func (s *Server) unaryLogging(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	resp, err := handler(ctx, req)
	s.logCall(ctx, info.FullMethod, start, err)
	return resp, err
}

func (s *Server) streamLogging(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	start := time.Now()
	err := handler(srv, ss)
	s.logCall(ss.Context(), info.FullMethod, start, err)
	return err
}

// logCall writes the access log line. ctx carries the otelgrpc span, so the
// telemetry logger adds trace_id/span_id.
func (s *Server) logCall(ctx context.Context, method string, start time.Time, err error) {
	st := callStatus(err)
	level := levelFor(st.Code())
	if st.Code() == codes.OK && strings.HasPrefix(method, "/"+healthgrpc.Health_ServiceDesc.ServiceName+"/") {
		// Successful probes arrive every few seconds per prober.
		level = slog.LevelDebug
	}
	if !s.logger.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{
		slog.String("method", method),
		slog.String("code", st.Code().String()),
		durationAttr(start),
		slog.String("request_id", RequestIDFromContext(ctx)),
		slog.String("peer", peerAddr(ctx)),
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", st.Message()))
	}
	s.logger.LogAttrs(ctx, level, "grpc call", attrs...)
}

// callStatus mirrors how grpc-go turns a handler error into the status the
// client sees, so the log and the client agree on the code.
func callStatus(err error) *status.Status {
	if err == nil {
		return status.New(codes.OK, "")
	}
	if st, ok := status.FromError(err); ok {
		return st
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return status.FromContextError(err)
	}
	return status.New(codes.Unknown, err.Error())
}

// levelFor: Error only for codes that mean the server (or something behind
// it) failed; every other failure is the caller's problem and only Warn, so
// error-rate alerts on logs are not triggered by bad requests.
func levelFor(c codes.Code) slog.Level {
	switch c {
	case codes.OK:
		return slog.LevelInfo
	case codes.Internal, codes.Unknown, codes.DataLoss, codes.Unavailable:
		return slog.LevelError
	default:
		return slog.LevelWarn
	}
}

func peerAddr(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return ""
}

// splitMethod turns "/pkg.Service/Method" into ("pkg.Service", "Method").
func splitMethod(full string) (service, method string) {
	full = strings.TrimPrefix(full, "/")
	if i := strings.LastIndexByte(full, '/'); i >= 0 {
		return full[:i], full[i+1:]
	}
	return "", full
}
