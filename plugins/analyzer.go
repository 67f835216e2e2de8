package plugins

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/threatd/threatd/core/analysis"
	pb "github.com/threatd/threatd/plugins/proto/v2"
)

// KindAnalyzer is the analyzer plugin kind (threatd-analyzer-<name>,
// docs/analysis.md).
const KindAnalyzer = "analyzer"

type analyzerPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	name, description string
	impl              analysis.Analyzer
}

func (p *analyzerPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterAnalyzerServer(s, &analyzerServer{p: p})
	return nil
}

func (p *analyzerPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &AnalyzerClient{rpc: pb.NewAnalyzerClient(c)}, nil
}

type analyzerServer struct {
	pb.UnimplementedAnalyzerServer
	p *analyzerPlugin
}

func (s *analyzerServer) Info(context.Context, *pb.AnalyzerInfoRequest) (*pb.AnalyzerInfo, error) {
	return &pb.AnalyzerInfo{Name: s.p.name, Description: s.p.description}, nil
}

func (s *analyzerServer) Analyze(ctx context.Context, req *pb.AnalyzeRequest) (*pb.AnalyzeReply, error) {
	t := analysis.Target{Ecosystem: req.Ecosystem, Name: req.Name, Version: req.Version, Digest: req.Digest, Path: req.Path}
	l := analysis.Limits{MaxArchiveBytes: req.MaxArchiveBytes, MaxFiles: int(req.MaxFiles), MaxFileBytes: req.MaxFileBytes, MaxUnpackedBytes: req.MaxUnpackedBytes}
	r, err := s.p.impl.Analyze(ctx, t, l, req.Settings)
	if err != nil {
		return nil, toStatus(err)
	}
	out := &pb.AnalyzeReply{Refused: r.Refused, Files: int64(r.Files), Bytes: r.Bytes}
	for _, f := range r.Findings {
		out.Findings = append(out.Findings, &pb.AnalysisFinding{Rule: f.Rule, Severity: string(f.Severity), File: f.File, Line: int64(f.Line),
			Excerpt: f.Excerpt, Description: f.Description})
	}
	return out, nil
}

// ServeAnalyzer is the main of an analyzer plugin binary: it serves impl
// as the analyzer name until the daemon stops it.
func ServeAnalyzer(name, description string, impl analysis.Analyzer) {
	slog.SetDefault(slog.New(slog.NewJSONHandler(os.Stderr, nil)))
	ignoreStopSignals()
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig:  Handshake,
		VersionedPlugins: map[int]goplugin.PluginSet{ProtocolVersion: {KindAnalyzer: &analyzerPlugin{name: name, description: description, impl: impl}}},
		GRPCServer:       goplugin.DefaultGRPCServer,
		Logger:           hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: os.Stderr, JSONFormat: true}),
	})
}

// AnalyzerClient is the daemon's side of an analyzer plugin: an
// analysis.Analyzer.
type AnalyzerClient struct {
	rpc    pb.AnalyzerClient
	closer func()
	exited func() bool
}

// Analyze asks the plugin to read t.
func (c *AnalyzerClient) Analyze(ctx context.Context, t analysis.Target, l analysis.Limits, settings map[string]string) (analysis.Read, error) {
	rep, err := c.rpc.Analyze(ctx, &pb.AnalyzeRequest{Ecosystem: t.Ecosystem, Name: t.Name, Version: t.Version, Digest: t.Digest, Path: t.Path,
		MaxArchiveBytes: l.MaxArchiveBytes, MaxFiles: int64(l.MaxFiles), MaxFileBytes: l.MaxFileBytes, MaxUnpackedBytes: l.MaxUnpackedBytes, Settings: settings})
	if err != nil {
		return analysis.Read{}, fromStatus(err)
	}
	r := analysis.Read{Refused: rep.Refused, Files: int(rep.Files), Bytes: rep.Bytes}
	for _, f := range rep.Findings {
		r.Findings = append(r.Findings, analysis.Finding{Rule: f.Rule, Severity: analysis.Severity(f.Severity), File: f.File, Line: int(f.Line),
			Excerpt: f.Excerpt, Description: f.Description})
	}
	return r, nil
}

// Close stops the plugin process.
func (c *AnalyzerClient) Close() {
	if c.closer != nil {
		c.closer()
	}
}

var _ analysis.Analyzer = (*AnalyzerClient)(nil)

// StartAnalyzer starts the analyzer plugin threatd-analyzer-<name>.
func (h *Host) StartAnalyzer(name string) (*AnalyzerClient, error) {
	raw, client, err := h.start(KindAnalyzer, name, &analyzerPlugin{})
	if err != nil {
		return nil, err
	}
	ac, ok := raw.(*AnalyzerClient)
	if !ok {
		client.kill()
		return nil, fmt.Errorf("analyzer plugin %q: unexpected client %T", name, raw)
	}
	ac.closer, ac.exited = client.kill, client.client.Exited
	return ac, nil
}

// RestartingAnalyzer is an analyzer plugin the daemon keeps running: a
// process that exited (a crash on a hostile archive) is started again for
// the next analysis, and the analysis it was reading gets an error.
type RestartingAnalyzer struct {
	Host *Host
	Name string

	mu     sync.Mutex
	client *AnalyzerClient
}

// Start starts the plugin (a missing binary is an error here, once).
func (r *RestartingAnalyzer) Start() error {
	_, err := r.current()
	return err
}

func (r *RestartingAnalyzer) current() (*AnalyzerClient, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.client != nil && !r.client.exited() {
		return r.client, nil
	}
	if r.client != nil {
		r.client.Close()
		r.client = nil
		r.Host.restarted(KindAnalyzer, r.Name)
	}
	c, err := r.Host.StartAnalyzer(r.Name)
	if err != nil {
		return nil, err
	}
	r.client = c
	return c, nil
}

// Analyze asks the running plugin, starting it again when it exited.
func (r *RestartingAnalyzer) Analyze(ctx context.Context, t analysis.Target, l analysis.Limits, settings map[string]string) (analysis.Read, error) {
	c, err := r.current()
	if err != nil {
		return analysis.Read{}, err
	}
	return c.Analyze(ctx, t, l, settings)
}

// Close stops the plugin.
func (r *RestartingAnalyzer) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.client != nil {
		r.client.Close()
		r.client = nil
	}
}
