package plugins

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/threatd/threatd/core"
)

// errorDomain tags the ErrorInfo details that threatd plugins attach.
const errorDomain = "threatd.plugin.v1"

// Reasons carried in ErrorInfo.Reason.
const (
	reasonInvalid  = "INVALID"
	reasonConflict = "CONFLICT"
	reasonNotFound = "NOT_FOUND"
	reasonLimit    = "LIMIT"
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
		fe *core.FieldError
		ce *core.ConflictError
		ne *core.NotFoundError
	)
	switch {
	case errors.As(err, &fe):
		return withInfo(codes.InvalidArgument, err.Error(), reasonInvalid, map[string]string{"field": fe.Field, "message": fe.Message})
	case errors.As(err, &ce):
		md := map[string]string{"what": ce.What, "key": ce.Key}
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
	case errors.Is(err, core.ErrUnavailable):
		return status.Error(codes.Unavailable, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	}
	return status.Error(codes.Internal, err.Error())
}

// isDomain reports whether err is (or wraps) one of core's typed errors.
func isDomain(err error) bool {
	for _, target := range []error{core.ErrNotFound, core.ErrConflict, core.ErrLimit, core.ErrInvalid, core.ErrUnavailable} {
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
	var md map[string]string
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.Domain == errorDomain {
			md = info.Metadata
		}
	}
	switch st.Code() {
	case codes.InvalidArgument:
		if md != nil {
			return &core.FieldError{Field: md["field"], Message: md["message"]}
		}
		return &core.FieldError{Message: st.Message()}
	case codes.AlreadyExists:
		ce := &core.ConflictError{What: md["what"], Key: md["key"]}
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
	case codes.Canceled:
		return fmt.Errorf("%w: %s", context.Canceled, st.Message())
	case codes.DeadlineExceeded:
		return fmt.Errorf("%w: %s", context.DeadlineExceeded, st.Message())
	}
	return errors.New(st.Message())
}
