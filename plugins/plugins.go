// Package plugins is threatd's plugin boundary: the versioned gRPC protocols
// (proto/v2), the go-plugin handshake, the shims that convert between proto
// and core types, and the host that starts, checks and stops plugin
// processes. Plugin authors never touch proto: a storage backend implements
// port.Store and calls ServeStorage.
package plugins

import (
	goplugin "github.com/hashicorp/go-plugin"
)

// ProtocolVersion is the plugin protocol version this build speaks.
const ProtocolVersion = 2

// Handshake is shared by the daemon and every plugin. It is not a security
// measure: it only keeps a plugin binary from being run by hand by mistake.
var Handshake = goplugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "THREATD_PLUGIN",
	MagicCookieValue: "9f6d1c7e-threatd-plugin",
}

// Plugin kinds, as dispensed by go-plugin and prefixed to binary names.
const (
	KindStorage = "storage"
)

// BinaryName returns the file name of a plugin binary: threatd-<kind>-<name>.
func BinaryName(kind, name string) string { return "threatd-" + kind + "-" + name }
