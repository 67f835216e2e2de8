// Package registries names the registry adapters the firewall serves: a
// new registry is a package under core/firewall and a line here.
package registries

import (
	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/core/firewall/cargo"
	"github.com/threatd/threatd/core/firewall/composer"
	"github.com/threatd/threatd/core/firewall/goproxy"
	"github.com/threatd/threatd/core/firewall/maven"
	"github.com/threatd/threatd/core/firewall/npm"
	"github.com/threatd/threatd/core/firewall/nuget"
	"github.com/threatd/threatd/core/firewall/openvsx"
	"github.com/threatd/threatd/core/firewall/pypi"
	"github.com/threatd/threatd/core/firewall/rubygems"
	"github.com/threatd/threatd/core/firewall/vscode"
)

// All are the adapters, one per registry.
func All() []firewall.Adapter {
	return []firewall.Adapter{npm.Adapter{}, pypi.Adapter{}, goproxy.Adapter{}, cargo.Adapter{}, maven.Adapter{}, nuget.Adapter{}, rubygems.Adapter{}, composer.Adapter{},
		openvsx.Adapter{}, vscode.Adapter{}}
}

// Names are the registries the firewall serves, as reports name them.
func Names() []string {
	var out []string
	for _, a := range All() {
		out = append(out, a.Registry())
	}
	return out
}
