package grpcserver

import (
	"context"
	"strings"

	"google.golang.org/grpc"

	"github.com/garden-bloom/memory/pkg/apierr"
)

// apiPrefix selects the API's own methods (gardenbloom.memory.v1 and
// later versions); health and reflection keep their statuses as they are.
const apiPrefix = "/gardenbloom."

// unaryErrorInfo makes every error status of an API method carry a
// google.rpc.ErrorInfo (apierr.WithInfo): handlers attach one with their
// reason already; this covers the rest (a panic's Internal, a context's
// DeadlineExceeded, an interceptor's status), so clients can always branch
// on the reason.
func unaryErrorInfo(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if err != nil && strings.HasPrefix(info.FullMethod, apiPrefix) {
		err = apierr.WithInfo(err)
	}
	return resp, err
}

func streamErrorInfo(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	err := handler(srv, ss)
	if err != nil && strings.HasPrefix(info.FullMethod, apiPrefix) {
		err = apierr.WithInfo(err)
	}
	return err
}
