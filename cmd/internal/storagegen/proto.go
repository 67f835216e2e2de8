package main

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

func comment(b *bytes.Buffer, indent, doc string) {
	for line := range strings.SplitSeq(strings.TrimSpace(doc), "\n") {
		if strings.TrimSpace(doc) == "" {
			return
		}
		fmt.Fprintf(b, "%s// %s\n", indent, strings.TrimRight(line, " "))
	}
}

func (g *gen) proto() []byte {
	g.number()
	var b bytes.Buffer
	b.WriteString(strings.Replace(header, "// Code", "// Code", 1))
	b.WriteString(`// The threatd storage plugin protocol, version 2, written from the Go
// port (port.Store): one RPC per method, each a whole use-case step run in
// one transaction inside the plugin. Lists stream. Errors are gRPC status
// codes with an ErrorInfo detail (plugins/errors.go): NOT_FOUND,
// ALREADY_EXISTS (conflict), RESOURCE_EXHAUSTED (limit), INVALID_ARGUMENT
// (field), UNAVAILABLE.
syntax = "proto3";

package threatd.plugin.v2;

import "google/protobuf/timestamp.proto";

option go_package = "github.com/threatd/threatd/plugins/proto/v2;pluginv2";

service Storage {
  // Configure opens the database. It is the first call after the handshake.
  rpc Configure(.threatd.plugin.v2.ConfigureRequest) returns (.threatd.plugin.v2.ConfigureReply);
`)
	for _, m := range g.methods {
		comment(&b, "  ", m.Doc)
		// Fully qualified: a method's name would hide a message of the same
		// name (rpc Stats returns Stats).
		const q = ".threatd.plugin.v2."
		req, reply := q+m.Req, q+m.Reply
		switch m.Kind {
		case serverStream, partStream:
			reply = "stream " + reply
		case callbackStream:
			reply = "stream " + q + m.Name + "Item"
		case clientStream:
			req = "stream " + q + m.Name + "Item"
		}
		fmt.Fprintf(&b, "  rpc %s(%s) returns (%s);\n", m.Name, req, reply)
	}
	b.WriteString(`}

// ConfigureRequest opens a plugin's database (plugins.StorageConfig).
message ConfigureRequest {
  string DSN = 1;
  string DataDir = 2;
  map<string, string> Settings = 3;
  bool Exclusive = 4;
  bool Create = 5;
  bool CreateEmpty = 6;
}

// ConfigureReply names the backend.
message ConfigureReply {
  string Backend = 1;
}
`)
	for _, m := range g.messages {
		b.WriteString("\n")
		comment(&b, "", m.Doc)
		fmt.Fprintf(&b, "message %s {\n", m.Name)
		for _, f := range m.Fields {
			fmt.Fprintf(&b, "  %s %s = %d;\n", f.Proto, f.Name, f.Number)
		}
		if len(m.Reserved) > 0 {
			var ns []string
			for _, n := range m.Reserved {
				ns = append(ns, strconv.Itoa(n))
			}
			fmt.Fprintf(&b, "  reserved %s;\n", strings.Join(ns, ", "))
		}
		b.WriteString("}\n")
	}
	return b.Bytes()
}
