// Package auth authenticates calls between the gRPC services of the memory
// backend.
//
// Every service shares one HMAC secret (see [LoadOrCreateSecret]). Callers
// present a short-lived JWT in the "authorization" metadata key; servers
// check it with a [Verifier] installed through [UnaryServerInterceptor] /
// [StreamServerInterceptor] and read the caller's identity back with
// [ClaimsFromContext]. Services calling each other use
// [NewServiceCredentials], which mints and caches HS256 tokens on the fly,
// so no long-lived bearer token ever has to be written down.
//
// HS256 tokens are verified with the shared secret. With [WithJWKSFile], a
// Verifier also accepts RS256 and ES256 tokens from an external issuer,
// verified with the public key of an RFC 7517 JWK Set named by the token's
// kid; the file is re-read when it changes so keys rotate without a restart.
// Each algorithm only ever meets keys of its own type, "none" is never
// accepted, and iss/aud are checked when configured ([WithIssuer],
// [WithAudience]).
package auth
