package misp

import (
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"time"

	"github.com/threatd/threatd/core"
)

// The query parameters of an export request for an event: the day
// (YYYY-MM-DD, UTC), the event's uuid, the organisation's name and uuid,
// and the web site (for the reports' pages). The daemon sets them.
const (
	ParamDate    = "date"
	ParamEvent   = "event_uuid"
	ParamOrgName = "org_name"
	ParamOrgUUID = "org_uuid"
	ParamSite    = "site"
)

// EventRequest is the event an export request asks for.
type EventRequest struct {
	Feed Feed
	Day  time.Time
	UUID string
}

// RequestOf reads an export request's parameters.
func RequestOf(q map[string]string) (EventRequest, error) {
	day, err := time.Parse("2006-01-02", q[ParamDate])
	if err != nil {
		return EventRequest{}, fmt.Errorf("misp: the request's %s is not a day: %q", ParamDate, q[ParamDate])
	}
	if q[ParamEvent] == "" || q[ParamOrgUUID] == "" {
		return EventRequest{}, fmt.Errorf("misp: the request names no %s or %s", ParamEvent, ParamOrgUUID)
	}
	return EventRequest{Feed: Feed{Org: Org{Name: q[ParamOrgName], UUID: q[ParamOrgUUID]}, Site: q[ParamSite]}, Day: day, UUID: q[ParamEvent]}, nil
}

// Write renders the event of one day's records (verified on that day, or
// withdrawn since) and writes its feed file, {"Event": …}.
func Write(w io.Writer, r EventRequest, records iter.Seq[core.ExportRecord]) error {
	e := r.Feed.NewEvent(r.Day, r.UUID)
	for rec := range records {
		t := rec.Threat
		t.IOCs = rec.IOCs
		r.Feed.Add(e, t, rec.Community)
	}
	b, err := json.Marshal(File{Event: *e})
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
