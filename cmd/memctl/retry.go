package main

import (
	"context"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// retryable calls call until it succeeds, fails for a reason a retry
// cannot fix, or attempts run out. Rate limits (RESOURCE_EXHAUSTED) and
// UNAVAILABLE are retried after the server's RetryInfo delay, else with
// exponential backoff from 100 ms: a bulk ingest with an agent token then
// runs at the rate the server grants instead of failing.
func retryable(ctx context.Context, attempts int, call func(context.Context) error) error {
	delay := 100 * time.Millisecond
	for i := 1; ; i++ {
		err := call(ctx)
		if err == nil || i >= attempts {
			return err
		}
		st, _ := status.FromError(err)
		if st.Code() != codes.ResourceExhausted && st.Code() != codes.Unavailable {
			return err
		}
		wait := delay
		for _, d := range st.Details() {
			if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay().AsDuration() > 0 {
				wait = ri.GetRetryDelay().AsDuration()
			}
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		delay = min(2*delay, 5*time.Second)
	}
}
