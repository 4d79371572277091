package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// writeSelfSigned writes a certificate for 127.0.0.1 and its key to dir and returns the
// pool that trusts it.
func writeSelfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sema e2e"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// TestServeOverTLS: sema serve --tls-cert --tls-key answers over HTTPS with that
// certificate, and a clear-text request to it is not served.
func TestServeOverTLS(t *testing.T) {
	certFile, keyFile, pool := writeSelfSigned(t, t.TempDir())
	addr := freeAddr(t)
	cmd := exec.Command(semaBin, "serve", "--listen", addr, "--tls-cert", certFile, "--tls-key", keyFile)
	cmd.Env = append(os.Environ(), "SEMA_HOME="+t.TempDir())
	var logs logBuffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 5 * time.Second}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := hc.Get("https://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.TLS == nil {
				t.Fatalf("readyz over TLS: %d, TLS %v", resp.StatusCode, resp.TLS != nil)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sema serve --tls-cert did not answer over TLS: %v\n%s", err, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if resp, err := http.Get("http://" + addr + "/readyz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("a clear-text request to the TLS port was served")
		}
	}
}

// TestServeRefusesHTTPFlags: a timeout of zero (which the HTTP server would read as none)
// or below, a negative connection or request cap, a header timeout longer than the request's, and
// a TLS certificate without its key or the reverse each stop sema serve with exit code
// 2, naming the flag or code; a pair that does not load is refused by code.
func TestServeRefusesHTTPFlags(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.pem")
	os.WriteFile(junk, []byte("not a certificate"), 0o600)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--read-header-timeout", "0s"}, "--read-header-timeout"},
		{[]string{"--read-timeout", "0s"}, "--read-timeout"},
		{[]string{"--write-timeout", "-1s"}, "--write-timeout"},
		{[]string{"--idle-timeout", "0s"}, "--idle-timeout"},
		{[]string{"--max-conns-per-ip", "-1"}, "--max-conns-per-ip"},
		{[]string{"--max-requests-per-tenant", "-1"}, "--max-requests-per-tenant"},
		{[]string{"--read-header-timeout", "1m", "--read-timeout", "30s"}, "--read-header-timeout"},
		{[]string{"--tls-cert", junk}, "serve.tls_invalid"},
		{[]string{"--tls-key", junk}, "serve.tls_invalid"},
		{[]string{"--tls-cert", junk, "--tls-key", junk}, "serve.tls_invalid"},
		{[]string{"--schedule-catch-up", "sometimes"}, "--schedule-catch-up"},
		{[]string{"--webhook-link-life", "0s"}, "--webhook-link-life"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a service that starts is a failure, not a hang
		defer cancel()
		cmd := exec.CommandContext(ctx, semaBin, append([]string{"serve", "--listen", "127.0.0.1:0"}, tc.args...)...)
		cmd.Env = append(os.Environ(), "SEMA_HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), tc.want) {
			t.Errorf("sema serve %v: exit %v, want 2 and %s: %s", tc.args, err, tc.want, out)
		}
	}
}
