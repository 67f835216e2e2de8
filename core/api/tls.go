package api

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// SelfSignedCert returns the certificate and key PEM files in dir, creating
// them on first use and reusing them on every later start (so that clients
// can pin the certificate). hosts (DNS names or addresses) are subject
// alternative names besides localhost, 127.0.0.1 and ::1. A certificate
// that has expired, expires within a week, or lacks one of hosts (a name
// added to server.tls.names) is replaced.
func SelfSignedCert(dir string, hosts []string) (certFile, keyFile string, created bool, err error) {
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if pair, err := tls.LoadX509KeyPair(certFile, keyFile); err == nil {
		if leaf, err := x509.ParseCertificate(pair.Certificate[0]); err == nil && time.Until(leaf.NotAfter) > 7*24*time.Hour && covers(leaf, hosts) {
			return certFile, keyFile, false, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", "", false, fmt.Errorf("existing TLS certificate in %s is unreadable: %w (remove it to have a new one generated)", dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", false, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", false, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return "", "", false, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "threatd self-signed", Organization: []string{"threatd"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(2 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	for _, h := range hosts {
		if h == "" || h == "localhost" {
			continue
		}
		if ip := net.ParseIP(h); ip != nil {
			if !ip.IsUnspecified() && !slices.ContainsFunc(tmpl.IPAddresses, ip.Equal) {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			}
		} else if !slices.Contains(tmpl.DNSNames, strings.ToLower(h)) {
			tmpl.DNSNames = append(tmpl.DNSNames, strings.ToLower(h))
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return "", "", false, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", "", false, err
	}
	if err := writePEM(keyFile, "PRIVATE KEY", keyDER, 0o600); err != nil {
		return "", "", false, err
	}
	if err := writePEM(certFile, "CERTIFICATE", der, 0o644); err != nil {
		return "", "", false, err
	}
	return certFile, keyFile, true, nil
}

// covers says whether the certificate names every one of hosts (an
// unspecified address, such as the listen address 0.0.0.0, needs none).
func covers(leaf *x509.Certificate, hosts []string) bool {
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			if !ip.IsUnspecified() && !slices.ContainsFunc(leaf.IPAddresses, ip.Equal) {
				return false
			}
		} else if h != "" && leaf.VerifyHostname(h) != nil {
			return false
		}
	}
	return true
}

// writePEM writes atomically (temp file + rename), so a crash never leaves half a key.
func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if err := pem.Encode(f, &pem.Block{Type: typ, Bytes: der}); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
