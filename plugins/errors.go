package plugins

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/threatd/threatd/core"
)

// errorDomain tags the ErrorInfo details that threatd plugins attach.
const errorDomain = "threatd.plugin.v2"

// Reasons carried in ErrorInfo.Reason.
const (
	reasonInvalid  = "INVALID"
	reasonConflict = "CONFLICT"
	reasonNotFound = "NOT_FOUND"
	reasonLimit    = "LIMIT"
	reasonCap      = "NEW_USER_CAP"
	reasonHourly   = "HOURLY_LIMIT"
	reasonStep     = "STEP"
	reasonStale    = "STALE"
	reasonVersion  = "VERSION"
)

// toStatus turns a domain error into a gRPC status error with typed details,
// so that the host can tell not-found from conflict from limit.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok && !isDomain(err) {
		return err
	}
	var (
		fe  *core.FieldError
		ce  *core.ConflictError
		ne  *core.NotFoundError
		se  *core.StepError
		cap *core.NewUserCapError
		hl  *core.HourlyLimitError
		ve  *core.VersionError
	)
	switch {
	case errors.As(err, &se):
		return withInfo(codes.Internal, err.Error(), reasonStep, map[string]string{"step": se.Step})
	case errors.Is(err, core.ErrStale):
		return withInfo(codes.Aborted, err.Error(), reasonStale, nil)
	case errors.As(err, &ve):
		return withInfo(codes.Aborted, err.Error(), reasonVersion, map[string]string{
			"threat_id": ve.ThreatID, "asked": strconv.Itoa(ve.Asked), "current": strconv.Itoa(ve.Current)})
	case errors.As(err, &cap):
		return withInfo(codes.PermissionDenied, err.Error(), reasonCap, map[string]string{
			"verified": strconv.Itoa(cap.Verified), "unverified": strconv.Itoa(cap.Unverified),
			"max_unverified": strconv.Itoa(cap.MaxUnverified), "verified_to_lift": strconv.Itoa(cap.VerifiedToLift)})
	case errors.As(err, &hl):
		return withInfo(codes.ResourceExhausted, err.Error(), reasonHourly, map[string]string{
			"limit": strconv.Itoa(hl.Limit), "retry_after_ms": strconv.FormatInt(hl.RetryAfter.Milliseconds(), 10)})
	case errors.As(err, &fe):
		return withInfo(codes.InvalidArgument, err.Error(), reasonInvalid, map[string]string{"field": fe.Field, "message": fe.Message})
	case errors.As(err, &ce):
		md := map[string]string{"what": ce.What, "key": ce.Key, "message": ce.Message}
		for k, v := range ce.Meta {
			md["meta."+k] = v
		}
		return withInfo(codes.AlreadyExists, err.Error(), reasonConflict, md)
	case errors.As(err, &ne):
		return withInfo(codes.NotFound, err.Error(), reasonNotFound, map[string]string{"what": ne.What, "key": ne.Key})
	case errors.Is(err, core.ErrNotFound):
		return withInfo(codes.NotFound, err.Error(), reasonNotFound, nil)
	case errors.Is(err, core.ErrConflict):
		return withInfo(codes.AlreadyExists, err.Error(), reasonConflict, nil)
	case errors.Is(err, core.ErrLimit):
		return withInfo(codes.ResourceExhausted, err.Error(), reasonLimit, nil)
	case errors.Is(err, core.ErrForbidden):
		return status.Error(codes.PermissionDenied, err.Error())
	case errors.Is(err, core.ErrUnavailable):
		return status.Error(codes.Unavailable, err.Error())
	case errors.Is(err, core.ErrCorrupt):
		return status.Error(codes.DataLoss, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	}
	return status.Error(codes.Internal, err.Error())
}

// isDomain reports whether err is (or wraps) one of core's typed errors.
func isDomain(err error) bool {
	var se *core.StepError
	if errors.As(err, &se) {
		return true
	}
	for _, target := range []error{core.ErrNotFound, core.ErrConflict, core.ErrLimit, core.ErrInvalid, core.ErrUnavailable, core.ErrForbidden, core.ErrStale, core.ErrCorrupt} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

func withInfo(c codes.Code, msg, reason string, md map[string]string) error {
	st := status.New(c, msg)
	if detailed, err := st.WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: errorDomain, Metadata: md}); err == nil {
		st = detailed
	}
	return st.Err()
}

// fromStatus turns a gRPC status error from a plugin back into a domain error.
func fromStatus(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	var (
		md     map[string]string
		reason string
	)
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.Domain == errorDomain {
			md, reason = info.Metadata, info.Reason
		}
	}
	num := func(k string) int { n, _ := strconv.Atoi(md[k]); return n }
	switch reason {
	case reasonStale:
		return core.ErrStale
	case reasonVersion:
		return &core.VersionError{ThreatID: md["threat_id"], Asked: num("asked"), Current: num("current")}
	case reasonStep:
		return &core.StepError{Step: md["step"], Err: errors.New(st.Message())}
	case reasonCap:
		return &core.NewUserCapError{Verified: num("verified"), Unverified: num("unverified"), MaxUnverified: num("max_unverified"), VerifiedToLift: num("verified_to_lift")}
	case reasonHourly:
		return &core.HourlyLimitError{Limit: num("limit"), RetryAfter: time.Duration(num("retry_after_ms")) * time.Millisecond}
	}
	switch st.Code() {
	case codes.PermissionDenied:
		return fmt.Errorf("%w: %s", core.ErrForbidden, st.Message())
	case codes.InvalidArgument:
		if md != nil {
			return &core.FieldError{Field: md["field"], Message: md["message"]}
		}
		return &core.FieldError{Message: st.Message()}
	case codes.AlreadyExists:
		ce := &core.ConflictError{What: md["what"], Key: md["key"], Message: md["message"]}
		if ce.What == "" {
			ce.Message = st.Message()
		}
		for k, v := range md {
			if len(k) > 5 && k[:5] == "meta." {
				if ce.Meta == nil {
					ce.Meta = map[string]string{}
				}
				ce.Meta[k[5:]] = v
			}
		}
		return ce
	case codes.NotFound:
		return &core.NotFoundError{What: md["what"], Key: md["key"]}
	case codes.ResourceExhausted:
		return fmt.Errorf("%w: %s", core.ErrLimit, st.Message())
	case codes.Unavailable:
		return fmt.Errorf("%w: %s", core.ErrUnavailable, st.Message())
	case codes.DataLoss:
		return fmt.Errorf("%w: %s", core.ErrCorrupt, strings.TrimPrefix(st.Message(), core.ErrCorrupt.Error()+": "))
	case codes.Canceled:
		if strings.Contains(st.Message(), "client connection is closing") {
			// The plugin process went away under the call, not the caller.
			return fmt.Errorf("%w: %s", core.ErrUnavailable, st.Message())
		}
		return fmt.Errorf("%w: %s", context.Canceled, st.Message())
	case codes.DeadlineExceeded:
		return fmt.Errorf("%w: %s", context.DeadlineExceeded, st.Message())
	}
	return errors.New(st.Message())
}
