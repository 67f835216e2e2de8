package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestReadEnvelope holds the pull's one-pass reading of an envelope to
// encoding/json's on what it accepts, and checks what it refuses.
func TestReadEnvelope(t *testing.T) {
	t.Parallel()
	var objs []string
	for i := range 250 {
		objs = append(objs, fmt.Sprintf(`{"type":"indicator","id":"indicator--%d","name":"a \"quoted\" \u2028 name","labels":["x",{"y":[1,2]}]}`, i))
	}
	page := `{"more":true,"next":"abc\u002fdef","objects":[` + strings.Join(objs, ",") + `]}`
	env, err := readEnvelope([]byte(page))
	if err != nil {
		t.Fatal(err)
	}
	var want struct {
		More    bool              `json:"more"`
		Next    string            `json:"next"`
		Objects []json.RawMessage `json:"objects"`
	}
	if err := json.Unmarshal([]byte(page), &want); err != nil {
		t.Fatal(err)
	}
	if env.More != want.More || env.Next != want.Next || env.Objects != len(want.Objects) {
		t.Fatalf("got %+v, want more %v next %q objects %d", env, want.More, want.Next, len(want.Objects))
	}
	if env, err := readEnvelope([]byte(`{"objects":[]}`)); err != nil || env.More || env.Next != "" || env.Objects != 0 {
		t.Fatalf("empty page: %+v, %v", env, err)
	}
	for _, bad := range []string{
		``,
		`[]`,
		`{"more":true`,
		`{"more":"yes","objects":[]}`,
		`{"next":1,"objects":[]}`,
		`{"objects":{}}`,
		`{"objects":[1]}`,
		`{"objects":[{"a":1},]}`,
		`{"objects":[{"a":1,"a":2}]}`,
		`{"objects":[{"a":"` + "\xff" + `"}]}`,
		`{"objects":[]} {}`,
		`{"more":false,"more":true,"objects":[]}`,
	} {
		if env, err := readEnvelope([]byte(bad)); err == nil {
			t.Errorf("%q: accepted as %+v", bad, env)
		}
	}
}
