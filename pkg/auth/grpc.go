package auth

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// MetadataKey is the gRPC metadata key carrying "Bearer <jwt>". gRPC
// metadata keys are lower-case.
const MetadataKey = "authorization"

// ErrorDomain is the google.rpc.ErrorInfo domain of authentication errors.
const ErrorDomain = "memory.gardenbloom.dev"

// google.rpc.ErrorInfo reasons attached to Unauthenticated statuses, so
// clients can branch on a stable value instead of parsing messages.
const (
	// ReasonUnauthenticated: no usable credentials; obtain new ones.
	ReasonUnauthenticated = "UNAUTHENTICATED"
	// ReasonTokenExpired: the token was valid but has expired; refresh it.
	ReasonTokenExpired = "TOKEN_EXPIRED"
)

type claimsKey struct{}

// ContextWithClaims returns a copy of ctx carrying c. The interceptors use
// it; it is exported so tests and in-process callers can fake an
// authenticated context.
func ContextWithClaims(ctx context.Context, c *Claims) context.Context {
	return context.WithValue(ctx, claimsKey{}, c)
}

// ClaimsFromContext returns the verified claims of the caller, if any. The
// boolean is false for unauthenticated contexts, including methods exempted
// through the interceptors' skip function.
func ClaimsFromContext(ctx context.Context) (*Claims, bool) {
	c, ok := ctx.Value(claimsKey{}).(*Claims)
	return c, ok && c != nil
}

// DefaultSkip exempts the standard gRPC health and reflection services from
// authentication, so load balancers, orchestrators and grpcurl keep working
// without tokens. Both reflection versions are listed because clients still
// probe v1alpha.
func DefaultSkip(fullMethod string) bool {
	for _, prefix := range []string{
		"/grpc.health.v1.Health/",
		"/grpc.reflection.v1.ServerReflection/",
		"/grpc.reflection.v1alpha.ServerReflection/",
	} {
		if strings.HasPrefix(fullMethod, prefix) {
			return true
		}
	}
	return false
}

// UnaryServerInterceptor authenticates unary calls with v and stores the
// claims in the handler's context (see [ClaimsFromContext]). Methods for
// which skip returns true are passed through untouched; a nil skip protects
// every method. Failures are codes.Unauthenticated with a
// google.rpc.ErrorInfo detail. It panics if v is nil, since a server that
// silently accepts everything is worse than one that does not start.
func UnaryServerInterceptor(v *Verifier, skip func(fullMethod string) bool) grpc.UnaryServerInterceptor {
	if v == nil {
		panic("auth: UnaryServerInterceptor requires a non-nil Verifier")
	}
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if skip != nil && skip(info.FullMethod) {
			return handler(ctx, req)
		}
		ctx, err := authenticate(ctx, v)
		if err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

// StreamServerInterceptor is the streaming counterpart of
// [UnaryServerInterceptor]; the claims are available from the stream's
// Context().
func StreamServerInterceptor(v *Verifier, skip func(fullMethod string) bool) grpc.StreamServerInterceptor {
	if v == nil {
		panic("auth: StreamServerInterceptor requires a non-nil Verifier")
	}
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if skip != nil && skip(info.FullMethod) {
			return handler(srv, ss)
		}
		ctx, err := authenticate(ss.Context(), v)
		if err != nil {
			return err
		}
		return handler(srv, &authedStream{ServerStream: ss, ctx: ctx})
	}
}

// authedStream overrides Context so stream handlers see the claims.
type authedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *authedStream) Context() context.Context { return s.ctx }

// authenticate verifies the bearer token in ctx's incoming metadata and
// returns ctx extended with the claims, or an Unauthenticated status.
func authenticate(ctx context.Context, v *Verifier) (context.Context, error) {
	token, err := bearerFromContext(ctx)
	if err != nil {
		return nil, err
	}
	claims, err := v.Verify(token)
	if err != nil {
		// Verify's error text has details for the server; callers learn why
		// from a fixed vocabulary, never anything echoed from the token.
		if errors.Is(err, ErrExpiredToken) {
			return nil, unauthenticated(PublicMessage(err), ReasonTokenExpired)
		}
		return nil, unauthenticated(PublicMessage(err), ReasonUnauthenticated)
	}
	return ContextWithClaims(ctx, claims), nil
}

// bearerFromContext extracts the token from "authorization: Bearer <jwt>".
// Exactly one header value is accepted; several would be ambiguous about
// which one a proxy or logger looked at.
func bearerFromContext(ctx context.Context) (string, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get(MetadataKey)
	switch len(vals) {
	case 0:
		return "", unauthenticated("missing bearer token", ReasonUnauthenticated)
	case 1:
	default:
		return "", unauthenticated("multiple authorization values", ReasonUnauthenticated)
	}
	token, ok := parseBearer(vals[0])
	if !ok {
		return "", unauthenticated("authorization must be a bearer token", ReasonUnauthenticated)
	}
	return token, nil
}

// parseBearer splits "Bearer <token>"; the scheme is case-insensitive per
// RFC 7235.
func parseBearer(h string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// unauthenticated builds a codes.Unauthenticated status carrying an
// ErrorInfo with the given reason.
func unauthenticated(msg, reason string) error {
	st := status.New(codes.Unauthenticated, msg)
	if withInfo, err := st.WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: ErrorDomain}); err == nil {
		st = withInfo
	}
	return st.Err()
}
