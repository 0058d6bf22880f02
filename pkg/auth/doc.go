// Package auth authenticates calls between the gRPC services of the memory
// backend.
//
// Every service shares one HMAC secret (see [LoadOrCreateSecret]). Callers
// present a short-lived HS256 JWT in the "authorization" metadata key;
// servers check it with a [Verifier] installed through
// [UnaryServerInterceptor] / [StreamServerInterceptor] and read the caller's
// identity back with [ClaimsFromContext]. Services calling each other use
// [NewServiceCredentials], which mints and caches tokens on the fly, so no
// long-lived bearer token ever has to be written down.
//
// The package deliberately supports a single algorithm (HS256) today. The
// [Verifier] selects keys per algorithm so that an RS256/JWKS path can be
// added later without changing its callers.
package auth
