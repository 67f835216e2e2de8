package siem

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"
)

// QueueMax bounds the messages waiting for the receiver.
const QueueMax = 10000

// MaxUDP is the largest message sent over UDP (one datagram); a larger one
// is dropped and counted (TCP and TLS take any size).
const MaxUDP = 65000

// Sender sends messages to one syslog receiver, in order, from a bounded
// queue; Send never waits.
type Sender struct {
	network, address string
	tls              *tls.Config
	log              *slog.Logger

	queue   chan []byte
	sent    atomic.Int64
	dropped atomic.Int64
	// Dropped, when set, is told of each message dropped (metrics).
	Dropped func()
}

// ParseAddress reads siem.syslog.address: udp://, tcp:// or tls://
// host:port.
func ParseAddress(s string) (network, address string, err error) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.User != nil {
		return "", "", fmt.Errorf("must be udp://, tcp:// or tls://host:port (got %q)", s)
	}
	switch u.Scheme {
	case "udp", "tcp", "tls":
	default:
		return "", "", fmt.Errorf("must be udp://, tcp:// or tls://host:port (got %q)", s)
	}
	if p, err := strconv.Atoi(u.Port()); err != nil || p < 1 || p > 65535 {
		return "", "", fmt.Errorf("needs a port from 1 to 65535 (got %q)", s)
	}
	return u.Scheme, u.Host, nil
}

// NewSender is a sender to address (as ParseAddress reads it); tlsConfig
// is for tls:// (nil: the system's roots). Run sends.
func NewSender(address string, tlsConfig *tls.Config, log *slog.Logger) (*Sender, error) {
	network, addr, err := ParseAddress(address)
	if err != nil {
		return nil, err
	}
	if network == "tls" {
		if tlsConfig == nil {
			tlsConfig = &tls.Config{}
		}
		tlsConfig = tlsConfig.Clone()
		if tlsConfig.ServerName == "" {
			host, _, _ := net.SplitHostPort(addr)
			tlsConfig.ServerName = host
		}
		tlsConfig.MinVersion = tls.VersionTLS12
	}
	return &Sender{network: network, address: addr, tls: tlsConfig, log: log, queue: make(chan []byte, QueueMax)}, nil
}

// Send queues msg (an RFC 5424 message without framing); when the queue
// is full it is dropped and counted.
func (s *Sender) Send(msg []byte) {
	if s == nil {
		return
	}
	if s.network == "udp" && len(msg) > MaxUDP {
		s.drop("a message longer than a UDP datagram takes")
		return
	}
	select {
	case s.queue <- msg:
	default:
		s.drop("the receiver is not taking messages as fast as they come")
	}
}

func (s *Sender) drop(why string) {
	if s.Dropped != nil {
		s.Dropped()
	}
	if n := s.dropped.Add(1); n%1000 == 1 {
		s.log.Warn("siem: messages dropped", "dropped", n, "why", why)
	}
}

// Counts are the messages sent and dropped so far.
func (s *Sender) Counts() (sent, dropped int64) { return s.sent.Load(), s.dropped.Load() }

// Queued is the number of messages waiting.
func (s *Sender) Queued() int { return len(s.queue) }

// Run sends queued messages until ctx ends, connecting (again) as needed:
// a message that could not be written is tried again on the next
// connection, after 1 s, doubling to 30 s while the receiver is down.
func (s *Sender) Run(ctx context.Context) {
	var (
		conn    net.Conn
		pending []byte
		wait    = time.Second
	)
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	for {
		if pending == nil {
			select {
			case <-ctx.Done():
				return
			case pending = <-s.queue:
			}
		}
		if conn == nil {
			c, err := s.dial(ctx)
			if err != nil {
				s.log.Warn("siem: cannot reach the syslog receiver; retrying", "address", s.network+"://"+s.address, "error", err.Error(), "retry_in", wait.String(), "queued", len(s.queue)+1)
				select {
				case <-ctx.Done():
					return
				case <-time.After(wait):
				}
				wait = min(2*wait, 30*time.Second)
				continue
			}
			conn, wait = c, time.Second
		}
		frame := pending
		if s.network != "udp" {
			// RFC 6587 octet counting: "LEN SP MSG".
			frame = append(strconv.AppendInt(nil, int64(len(pending)), 10), ' ')
			frame = append(frame, pending...)
		}
		_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := conn.Write(frame); err != nil {
			s.log.Warn("siem: writing to the syslog receiver failed; reconnecting", "address", s.network+"://"+s.address, "error", err.Error())
			conn.Close()
			conn = nil
			continue
		}
		s.sent.Add(1)
		pending = nil
	}
}

func (s *Sender) dial(ctx context.Context) (net.Conn, error) {
	d := &net.Dialer{Timeout: 10 * time.Second}
	switch s.network {
	case "udp":
		return d.DialContext(ctx, "udp", s.address)
	case "tcp":
		return d.DialContext(ctx, "tcp", s.address)
	}
	td := &tls.Dialer{NetDialer: d, Config: s.tls}
	return td.DialContext(ctx, "tcp", s.address)
}
