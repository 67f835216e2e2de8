package fakeregistry

import (
	"archive/zip"
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// MavenArtifact publishes group:artifact in u's Maven repository (under
// /maven2): maven-metadata.xml with its checksum files, and per version a
// .pom (Last-Modified its publish time) depending on deps, and a .jar,
// each with its .sha1.
func (u *Registry) MavenArtifact(t testing.TB, group, artifact string, versions []string, at []time.Time, deps ...string) {
	t.Helper()
	dir := "/maven2/" + strings.ReplaceAll(group, ".", "/") + "/" + artifact
	var vs strings.Builder
	for _, v := range versions {
		fmt.Fprintf(&vs, "      <version>%s</version>\n", v)
	}
	last := versions[len(versions)-1]
	meta := fmt.Sprintf("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<metadata>\n  <groupId>%s</groupId>\n  <artifactId>%s</artifactId>\n  <versioning>\n    <latest>%s</latest>\n    <release>%s</release>\n    <versions>\n%s    </versions>\n    <lastUpdated>20260101000000</lastUpdated>\n  </versioning>\n</metadata>\n",
		group, artifact, last, last, vs.String())
	u.PutMaven(dir+"/maven-metadata.xml", "text/xml", []byte(meta), time.Time{})
	var depXML strings.Builder
	for _, d := range deps {
		p := strings.Split(d, ":")
		fmt.Fprintf(&depXML, "    <dependency><groupId>%s</groupId><artifactId>%s</artifactId><version>%s</version></dependency>\n", p[0], p[1], p[2])
	}
	for i, v := range versions {
		pom := fmt.Sprintf("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<project xmlns=\"http://maven.apache.org/POM/4.0.0\">\n  <modelVersion>4.0.0</modelVersion>\n  <groupId>%s</groupId>\n  <artifactId>%s</artifactId>\n  <version>%s</version>\n  <dependencies>\n%s  </dependencies>\n</project>\n",
			group, artifact, v, depXML.String())
		u.PutMaven(dir+"/"+v+"/"+artifact+"-"+v+".pom", "text/xml", []byte(pom), at[i])
		var jar bytes.Buffer
		zw := zip.NewWriter(&jar)
		w, _ := zw.Create("META-INF/MANIFEST.MF")
		_, _ = w.Write([]byte("Manifest-Version: 1.0\n"))
		_ = zw.Close()
		u.PutMaven(dir+"/"+v+"/"+artifact+"-"+v+".jar", "application/java-archive", jar.Bytes(), at[i])
	}
}

// PutMaven serves a file and its .md5 and .sha1, with Last-Modified when at is set.
func (u *Registry) PutMaven(p, contentType string, body []byte, at time.Time) {
	u.Mu.Lock()
	defer u.Mu.Unlock()
	h := map[string]string{}
	if !at.IsZero() {
		h["Last-Modified"] = at.UTC().Format(http.TimeFormat)
	}
	u.Files[p] = File{Body: body, ContentType: contentType, MaxAge: 60, Header: h}
	s1, s5 := sha1.Sum(body), md5.Sum(body)
	u.Files[p+".sha1"] = File{Body: []byte(hex.EncodeToString(s1[:])), ContentType: "text/plain", MaxAge: 60}
	u.Files[p+".md5"] = File{Body: []byte(hex.EncodeToString(s5[:])), ContentType: "text/plain", MaxAge: 60}
}
