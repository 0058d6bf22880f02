// Package grpctest serves gRPC services on loopback for tests, behind the
// same bearer-token interceptors memoryd uses, and mints tokens for them —
// real gRPC over a socket, as our tests require, without each package
// rebuilding the plumbing.
package grpctest

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/garden-bloom/memory/pkg/auth"
)

// secret signs every test server's tokens, so a token works on any of them.
var secret = []byte(strings.Repeat("t", 64))

// Server is a running test server and a client connection to it.
type Server struct {
	Conn   *grpc.ClientConn
	Signer *auth.Signer
	stop   sync.Once
	srv    *grpc.Server
}

// Serve starts a server with register's services; it stops at cleanup.
func Serve(t testing.TB, register func(grpc.ServiceRegistrar)) *Server {
	t.Helper()
	signer, err := auth.NewSigner(secret)
	require.NoError(t, err)
	verifier, err := auth.NewVerifier(secret)
	require.NoError(t, err)
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(auth.UnaryServerInterceptor(verifier, nil)),
		grpc.ChainStreamInterceptor(auth.StreamServerInterceptor(verifier, nil)))
	register(srv)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	s := &Server{Conn: conn, Signer: signer, srv: srv}
	t.Cleanup(s.Stop)
	return s
}

// Stop closes the connection and stops the server (once).
func (s *Server) Stop() {
	s.stop.Do(func() {
		_ = s.Conn.Close()
		s.srv.Stop()
	})
}

// As returns a context carrying a token for sub with the roles and agents.
func (s *Server) As(t testing.TB, sub string, roles []auth.Role, agents ...string) context.Context {
	t.Helper()
	tok, err := s.Signer.Mint(sub, roles, agents, time.Hour)
	require.NoError(t, err)
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+tok)
}
