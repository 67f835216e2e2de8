package index

import (
	"errors"
	"time"

	"github.com/threatd/threatd/core"
)

// spillWriteError is a failure to write the spill file (a full disk, an
// I/O error): the fill tries again later and later, and checks of reports
// without an entry read storage meanwhile, as before the spill.
type spillWriteError struct{ err error }

func (e spillWriteError) Error() string {
	return "index spill: cannot write its file in the cache directory (" + e.err.Error() + "); checks read storage meanwhile"
}

func (e spillWriteError) Unwrap() error { return e.err }

// Pauses after a failed write: doubling from spillRetryMin to
// spillRetryMax; a failure that goes on is reported again every
// spillReportEvery, a new one at once. (Variables for the tests.)
var (
	spillRetryMin    = time.Second
	spillRetryMax    = 5 * time.Minute
	spillReportEvery = 10 * time.Minute
)

// SpillHooks hear of the spill's fill (FillSpill): Failed of a failure,
// once when it starts or changes and every spillReportEvery while it lasts
// (with the pause before the next try); Recovered when writes succeed
// again after one; Filled once, when the first pass ends; Read of every
// batch of reports the fill read from storage, as GetThreats returned
// them (a batch tried again is read again), so that another reader of
// every verified report can take them from the same pass (the block
// lists).
type SpillHooks struct {
	Failed    func(err error, retryIn time.Duration)
	Recovered func()
	Filled    func(SpillStats)
	Read      func([]core.Threat)
}

// SpillFailure is why the spill cannot be written now ("" when it can, or
// when there is no spill), for healthz.
func (x *Index) SpillFailure() string {
	if p := x.spillFailure.Load(); p != nil {
		return *p
	}
	return ""
}

// spillRetry tracks the fill's failures.
type spillRetry struct {
	pause    time.Duration
	reported time.Time
	last     string
}

// failed notes err and returns the pause before the next try; it calls
// hooks.Failed when the failure is new or has gone on for long.
func (x *Index) spillFailed(r *spillRetry, err error, hooks SpillHooks) time.Duration {
	var we spillWriteError
	if !errors.As(err, &we) {
		// A storage read failed (or a report could not be rendered):
		// reported each time, tried again after a second.
		if hooks.Failed != nil {
			hooks.Failed(err, spillRetryMin)
		}
		return spillRetryMin
	}
	r.pause = min(max(2*r.pause, spillRetryMin), spillRetryMax)
	msg := we.Error()
	x.spillFailure.Store(&msg)
	if hooks.Failed != nil && (msg != r.last || time.Since(r.reported) >= spillReportEvery) {
		hooks.Failed(err, r.pause)
		r.reported, r.last = time.Now(), msg
	}
	return r.pause
}

// spillWrote notes a successful write after failures.
func (x *Index) spillWrote(r *spillRetry, hooks SpillHooks) {
	if x.spillFailure.Swap(nil) != nil && hooks.Recovered != nil {
		hooks.Recovered()
	}
	*r = spillRetry{}
}
