package api

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/threatd/threatd/core"
)

// publicLatestBody renders the query-latest body for every caller who may
// not see a contact e-mail (not a reviewer, not the submitter of one of the
// reports), as c.JSON writes it: json.Encoder, HTML escaped, a final
// newline. index.LatestEntry keeps it once rendered.
func (s *Server) publicLatestBody(threats []core.Threat) ([]byte, error) {
	var b bytes.Buffer
	err := json.NewEncoder(&b).Encode(s.latestBody(threats, core.Principal{}))
	return b.Bytes(), err
}

// latestBody is the query-latest response for viewer.
func (s *Server) latestBody(threats []core.Threat, viewer core.Principal) map[string]any {
	return map[string]any{"threats": s.records(threats, viewer), "count": len(threats)}
}

// seesContacts says whether viewer sees a contact e-mail of threats.
func seesContacts(threats []core.Threat, viewer core.Principal) bool {
	return slices.ContainsFunc(threats, func(t core.Threat) bool { return t.ShowsContactTo(viewer) })
}
