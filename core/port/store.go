// Package port assembles the storage port once: the store interface of the
// domain (core) and of each feature (its own package declares its types
// and its store), which every storage backend implements and from which
// cmd/internal/storagegen generates the plugin boundary. A new feature adds
// its store here, not files to the core package.
package port

import (
	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/analysis"
	"github.com/threatd/threatd/core/community"
	"github.com/threatd/threatd/core/exposure"
	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/core/webhooks"
)

// Store is the storage port of the daemon, composed of one interface per
// concern so that a use case can ask for the part it needs. Every method is
// one coarse operation run in one transaction inside the storage backend,
// because every call may cross a process boundary. Errors are the domain
// errors of core (ErrNotFound, ErrConflict, ErrLimit, FieldError), wrapped
// as needed.
type Store interface {
	core.Store
	webhooks.WebhookStore
	firewall.FirewallStore
	firewall.LedgerStore
	community.SightingStore
	community.ReputationStore
	community.CampaignStore
	analysis.Store
	exposure.Store
}
