// Command wrongproto is a test plugin that speaks storage protocol version 3,
// which this daemon does not: the daemon must refuse it with a clear error.
// It first writes the environment it was started with to
// $TMPDIR/plugin-environ, for the test to check what a plugin inherits.
package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/threatd/threatd/plugins"
)

type nothing struct {
	goplugin.NetRPCUnsupportedPlugin
}

func (nothing) GRPCServer(*goplugin.GRPCBroker, *grpc.Server) error { return nil }
func (nothing) GRPCClient(context.Context, *goplugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, nil
}

func main() {
	if dir := os.Getenv("TMPDIR"); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, "plugin-environ"), []byte(strings.Join(os.Environ(), "\n")), 0o600)
	}
	hs := plugins.Handshake
	hs.ProtocolVersion = 3
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig:  hs,
		VersionedPlugins: map[int]goplugin.PluginSet{3: {plugins.KindStorage: nothing{}}},
		GRPCServer:       goplugin.DefaultGRPCServer,
	})
}
