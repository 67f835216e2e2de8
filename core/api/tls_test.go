package api

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
)

// The self-signed certificate names what it is asked to cover, is kept
// while it does, and is made again when a name is added.
func TestSelfSignedCertNames(t *testing.T) {
	dir := t.TempDir()
	leaf := func(certFile, keyFile string) *x509.Certificate {
		t.Helper()
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		l, err := x509.ParseCertificate(pair.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	c, k, created, err := SelfSignedCert(dir, []string{"0.0.0.0", "threatd.example", "10.1.2.3", "build-host"})
	if err != nil || !created {
		t.Fatalf("first: %v %v", created, err)
	}
	first := leaf(c, k)
	for _, h := range []string{"localhost", "threatd.example", "THREATD.example", "build-host", "127.0.0.1", "::1", "10.1.2.3"} {
		if err := first.VerifyHostname(h); err != nil {
			t.Errorf("%s: %v", h, err)
		}
	}
	if err := first.VerifyHostname("other.example"); err == nil {
		t.Error("it covers a name it was not asked for")
	}
	if _, _, created, err := SelfSignedCert(dir, []string{"threatd.example", "::"}); err != nil || created {
		t.Fatalf("the same names again: made again %v, %v", created, err)
	}
	c, k, created, err = SelfSignedCert(dir, []string{"threatd.example", "mirror.internal.example"})
	if err != nil || !created {
		t.Fatalf("a name added: made again %v, %v", created, err)
	}
	if err := leaf(c, k).VerifyHostname("mirror.internal.example"); err != nil {
		t.Fatal(err)
	}
}
