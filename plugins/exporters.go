package plugins

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/status"

	"github.com/threatd/threatd/core"
)

// The exporter errors are core's.
var (
	ErrExporterUnavailable = core.ErrExporterUnavailable
	ErrExporterFailed      = core.ErrExporterFailed
	ErrExporterTimeout     = core.ErrExporterTimeout
)

// ExporterWait bounds how long a request waits for an exporter that is
// still starting (core.ErrExporterTimeout after it: 504).
const ExporterWait = 10 * time.Second

// Exporters starts and keeps exporter plugin processes, one per name, in the
// background: the API serves at once, an exporter that is slow or hangs at
// its handshake delays only its own requests (each waits at most
// ExporterWait), and one that has exited is restarted on its next use.
type Exporters struct {
	host  *Host
	mu    sync.Mutex
	slots map[string]*exporterSlot
}

// exporterSlot is one exporter's process and the state of its start.
type exporterSlot struct {
	running  *runningExporter
	starting chan struct{} // non-nil while a start is under way; closed when it ends
	lastErr  error
}

type runningExporter struct {
	client *plugin
	rpc    *ExporterClient
}

// NewExporters returns an exporter pool over host.
func NewExporters(host *Host) *Exporters {
	return &Exporters{host: host, slots: map[string]*exporterSlot{}}
}

// Start starts the named exporters in the background and returns at once;
// one that cannot start is logged, and its endpoints answer 503 until it can.
func (x *Exporters) Start(names []string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, n := range names {
		x.startLocked(n)
	}
}

// States describes each exporter for /healthz: ready, starting or
// unavailable.
func (x *Exporters) States() map[string]string {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := make(map[string]string, len(x.slots))
	for n, sl := range x.slots {
		switch {
		case sl.running != nil && !sl.running.client.exited():
			out[n] = "ready"
		case sl.starting != nil:
			out[n] = "starting"
		case sl.running != nil:
			out[n] = "exited (restarted on its next request)"
		default:
			out[n] = "unavailable"
		}
	}
	return out
}

// startLocked begins a start of name unless one is under way; x.mu is held.
func (x *Exporters) startLocked(name string) chan struct{} {
	sl := x.slots[name]
	if sl == nil {
		sl = &exporterSlot{}
		x.slots[name] = sl
	}
	if sl.starting != nil {
		return sl.starting
	}
	done := make(chan struct{})
	sl.starting = done
	go func() {
		raw, p, err := x.host.start(KindExporter, name, &exporterPlugin{})
		var rpc *ExporterClient
		if err == nil {
			var ok bool
			if rpc, ok = raw.(*ExporterClient); !ok {
				p.kill()
				err = fmt.Errorf("exporter %q: unexpected client %T", name, raw)
			}
		}
		x.mu.Lock()
		if err != nil {
			sl.running, sl.lastErr = nil, err
			x.host.warn("exporter unavailable: its endpoints answer 503 until it can start", "exporter", name, "error", err.Error())
		} else {
			sl.running, sl.lastErr = &runningExporter{client: p, rpc: rpc}, nil
		}
		sl.starting = nil
		close(done)
		x.mu.Unlock()
	}()
	return done
}

// get returns the named exporter's client, starting it if needed and
// waiting at most ExporterWait for a start under way.
func (x *Exporters) get(ctx context.Context, name string) (*ExporterClient, error) {
	x.mu.Lock()
	sl := x.slots[name]
	if sl != nil && sl.running != nil {
		if !sl.running.client.exited() {
			rpc := sl.running.rpc
			x.mu.Unlock()
			return rpc, nil
		}
		x.host.warn("exporter process had exited; restarting it", "exporter", name)
		x.host.restarted(KindExporter, name)
		sl.running.client.kill()
		sl.running = nil
	}
	done := x.startLocked(name)
	sl = x.slots[name]
	x.mu.Unlock()

	timer := time.NewTimer(ExporterWait)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		return nil, &core.ExporterError{Exporter: name, Kind: ErrExporterTimeout, Cause: fmt.Errorf("still starting after %s", ExporterWait)}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if sl.running == nil {
		return nil, &core.ExporterError{Exporter: name, Kind: ErrExporterUnavailable, Cause: sl.lastErr}
	}
	return sl.running.rpc, nil
}

// Export runs the named exporter on req, writing the document to w.
func (x *Exporters) Export(ctx context.Context, name string, req ExportRequest, w core.ExportWriter) error {
	c, err := x.get(ctx, name)
	if err != nil {
		return err
	}
	err = c.Export(ctx, req, w)
	var sel *selectionError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &sel):
		return sel.err // the records could not be read: not the exporter's fault
	case ctx.Err() != nil:
		return ctx.Err()
	}
	// The process may have died; go-plugin notices exits asynchronously,
	// so drop it now: the next request starts a fresh one.
	x.drop(name, c)
	return &core.ExporterError{Exporter: name, Kind: ErrExporterFailed, Cause: errors.New(status.Convert(err).Message())}
}

// drop stops and forgets the named exporter if c is still its client.
func (x *Exporters) drop(name string, c *ExporterClient) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if sl := x.slots[name]; sl != nil && sl.running != nil && sl.running.rpc == c {
		sl.running.client.kill()
		sl.running = nil
		x.host.logf("exporter failed a request; it will be restarted on the next one", "exporter", name)
	}
}

// Close stops every exporter process, waiting for starts under way.
func (x *Exporters) Close() {
	x.mu.Lock()
	var pending []chan struct{}
	for _, sl := range x.slots {
		if sl.starting != nil {
			pending = append(pending, sl.starting)
		}
	}
	x.mu.Unlock()
	for _, ch := range pending {
		<-ch
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for n, sl := range x.slots {
		if sl.running != nil {
			sl.running.client.kill()
		}
		delete(x.slots, n)
	}
}

var _ core.Exporters = (*Exporters)(nil)
