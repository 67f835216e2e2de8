package record

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/coretest"
)

// FuzzAppendJSON holds a record's Base, written by hand (PublicJSON and
// AppendPublicJSON), to
// the bytes json.Marshal writes for it: hostile text in every text field
// and list, times of every zone and precision (and years json.Marshal
// refuses, which go to it), counts, nulls and the private e-mail.
func FuzzAppendJSON(f *testing.F) {
	f.Add("left-pad<script>", "a & b \u2028 \"q\" \\", "é\xff\x00\x1f", int64(1764300000), int64(123456789), 3600, int64(42), true)
	f.Add("", "", "", int64(0), int64(0), 0, int64(-1), false)
	f.Add("x", "\t\n\r", "\u2029\ufffd", int64(-62135596800-1), int64(0), 0, int64(0), true) // year 0 and before
	f.Add("y", "z", "w", int64(253402300800), int64(1), 0, int64(9), false)                  // year 10000
	f.Add("y", "z", "w", int64(1764300000), int64(0), 30, int64(9), true)                    // an offset of part of a minute
	f.Fuzz(func(t *testing.T, s1, s2, s3 string, sec, nsec int64, offset int, n int64, full bool) {
		at := time.Unix(sec, nsec%1e9).In(time.FixedZone("z", offset%86400))
		th := core.Threat{ID: s1, Status: core.StatusVerified, ReportType: core.TypePackage, ResourceIdentifier: s2, CreatedAt: at,
			Details: core.Details{ThreatDescription: s3, Tags: []string{s1, s2}}}
		if full {
			th.Registry, th.VerifiedAt, th.VerifiedBy, th.Revision = s3, &at, s1, int(n%1000)
			th.Details.PackageName, th.Details.ContactEmail, th.Details.Contributors = s2, s3, []string{s3}
			th.Details.FirstSeen, th.Details.DownloadCount = &at, &n
			coretest.Fill(&th.Details)
		}
		for _, viewer := range []core.Principal{{}, {User: core.User{ID: "u1", Role: core.RoleAdmin}}} {
			want, wantErr := json.Marshal(BaseOf(th, viewer))
			seen := th.VisibleTo(viewer)
			got, ok := appendBase(nil, &seen)
			if ok != (wantErr == nil) {
				t.Fatalf("written by hand: %v, json.Marshal's error %v", ok, wantErr)
			}
			if ok && !bytes.Equal(got, want) {
				t.Fatalf("written by hand:\n%s\njson.Marshal:\n%s", got, want)
			}
			if viewer.User.ID == "" {
				pub, err := PublicJSON(th)
				if (err == nil) != (wantErr == nil) || !bytes.Equal(pub, want) && err == nil {
					t.Fatalf("PublicJSON %s (%v), json.Marshal %s (%v)", pub, err, want, wantErr)
				}
				// Appended after an entry's head (the spill's fill): the
				// record follows it, and an error leaves the head alone.
				head := []byte("entry head\x00")
				got, err := AppendPublicJSON(head[:len(head):len(head)], th)
				if err == nil && !bytes.Equal(got, append(head, want...)) || err != nil && !bytes.Equal(got, head) {
					t.Fatalf("AppendPublicJSON %q (%v), json.Marshal %s (%v)", got, err, want, wantErr)
				}
			}
		}
	})
}
