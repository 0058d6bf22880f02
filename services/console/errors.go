package console

import (
	"net/http"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/garden-bloom/memory/pkg/apierr"
)

// errorView is the error page's data.
type errorView struct {
	Heading string
	Message string
	// Reason is the service's ErrorInfo reason ("PERMISSION_DENIED"), when
	// the refusal came from a service.
	Reason string
	// Back is a link to where the person came from, when known.
	Back string
}

// renderError shows an error page with code.
func (s *Server) renderError(w http.ResponseWriter, r *http.Request, c *caller, code int, heading, msg string) {
	s.renderErrorView(w, r, c, code, errorView{Heading: heading, Message: msg})
}

func (s *Server) renderErrorView(w http.ResponseWriter, r *http.Request, c *caller, code int, v errorView) {
	w.Header().Set("Cache-Control", "no-store")
	d := base(c, v.Heading, "")
	d.Data = v
	s.render(w, r, code, "error", d)
}

// callFailed shows why a service refused or failed a call: its own message
// and reason (services never put internals in them), under the HTTP
// status the REST edge would give.
func (s *Server) callFailed(w http.ResponseWriter, r *http.Request, c *caller, err error, back string) {
	code, heading := httpStatus(err)
	v := errorView{Heading: heading, Message: status.Convert(err).Message(), Back: back}
	if info := apierr.Info(err); info != nil {
		v.Reason = info.GetReason()
	}
	if code >= 500 {
		s.log.Warn("console: a service call failed", "path", r.URL.Path, "err", err)
	}
	s.renderErrorView(w, r, c, code, v)
}

// httpStatus maps a gRPC error to an HTTP status and a heading a person
// understands.
func httpStatus(err error) (int, string) {
	switch status.Code(err) {
	case codes.InvalidArgument, codes.OutOfRange:
		return http.StatusBadRequest, "Not a valid request"
	case codes.Unauthenticated:
		return http.StatusUnauthorized, "Not signed in"
	case codes.PermissionDenied:
		return http.StatusForbidden, "Not allowed"
	case codes.NotFound:
		return http.StatusNotFound, "Not found"
	case codes.FailedPrecondition, codes.AlreadyExists, codes.Aborted:
		return http.StatusConflict, "Not possible now"
	case codes.ResourceExhausted:
		return http.StatusTooManyRequests, "Too many requests"
	case codes.Unimplemented:
		return http.StatusNotImplemented, "Not available"
	case codes.Unavailable:
		return http.StatusServiceUnavailable, "Unavailable"
	case codes.DeadlineExceeded, codes.Canceled:
		return http.StatusGatewayTimeout, "Timed out"
	default:
		return http.StatusBadGateway, "Error"
	}
}
