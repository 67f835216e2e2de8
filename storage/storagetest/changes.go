package storagetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/threatd/threatd/core"
)

func testChangeFeed(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	u, err := s.CreateUser(c, newUser("dave@example.com"))
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := newToken(u.ID)
	if _, err := s.CreateToken(c, tok); err != nil {
		t.Fatal(err)
	}
	n := 5
	if _, err := s.SetUserLimit(c, core.UserLimit{Email: u.Email, PerHour: &n}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RevokeToken(c, tok.Hash); err != nil {
		t.Fatal(err)
	}
	_, _ = s.RevokeToken(c, tok.Hash)        // no-op: no change
	_, _ = s.CreateUser(c, newUser(u.Email)) // refused: no change
	changes, err := s.Changes(c, core.ChangeQuery{After: 0, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"user/create/" + u.ID, "token/create/" + tok.ID, "user/update/" + u.ID, "token/revoke/" + tok.ID}
	var got []string
	for i, ch := range changes {
		got = append(got, fmt.Sprintf("%s/%s/%s", ch.Entity, ch.Op, ch.EntityID))
		if i > 0 && ch.Seq <= changes[i-1].Seq {
			t.Fatalf("seq not increasing: %+v", changes)
		}
		if ch.At.IsZero() {
			t.Fatalf("change without time: %+v", ch)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("feed = %v, want %v", got, want)
	}
	tail, err := s.Changes(c, core.ChangeQuery{After: changes[1].Seq, Limit: 1})
	if err != nil || len(tail) != 1 || tail[0].Seq != changes[2].Seq {
		t.Fatalf("paging after %d limit 1: %+v %v", changes[1].Seq, tail, err)
	}
	if rest, err := s.Changes(c, core.ChangeQuery{After: changes[3].Seq, Limit: 100}); err != nil || len(rest) != 0 {
		t.Fatalf("after the last change: %+v %v", rest, err)
	}
	if st, _ := s.Stats(c); st.LastSeq != changes[3].Seq {
		t.Fatalf("stats last seq %d, want %d", st.LastSeq, changes[3].Seq)
	}
}

func testConcurrentDuplicateUser(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		ok, confl int
		other     []error
	)
	for range 20 {
		wg.Go(func() {
			_, err := s.CreateUser(c, newUser("eve@example.com"))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, core.ErrConflict):
				confl++
			default:
				other = append(other, err)
			}
		})
	}
	wg.Wait()
	if ok != 1 || confl != 19 || len(other) > 0 {
		t.Fatalf("20 concurrent creates of one e-mail: %d created, %d conflicts, other errors %v", ok, confl, other)
	}
}

// testChangeFeedConcurrentWriters follows the feed while many writers commit
// and checks that the follower saw every change: no seq was skipped because a
// later one became visible first.
func testChangeFeedConcurrentWriters(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	const writers, each = 8, 15
	created := make(chan string, writers*each)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				u, err := s.CreateUser(c, newUser(fmt.Sprintf("w%d-%d@example.com", w, i)))
				if err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
				created <- u.ID
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	seen := map[string]bool{}
	var last int64
	follow := func() {
		changes, err := s.Changes(c, core.ChangeQuery{After: last, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range changes {
			if ch.Seq <= last {
				t.Fatalf("feed went backwards: %d after %d", ch.Seq, last)
			}
			last = ch.Seq
			seen[ch.EntityID] = true
		}
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
			follow()
		}
	}
	follow()
	close(created)
	n := 0
	for id := range created {
		n++
		if !seen[id] {
			t.Errorf("follower never saw the creation of user %s", id)
		}
	}
	if n != writers*each {
		t.Fatalf("created %d users, want %d", n, writers*each)
	}
}

func testReopen(t *testing.T, b Backend) {
	db := dbName(t)
	s, err := b(t, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := ctx(t)
	u, err := s.CreateUser(c, newUser("frank@example.com"))
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := newToken(u.ID)
	if _, err := s.CreateToken(c, tok); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := open(t, b, db)
	if o, err := s2.Authenticate(c, tok.Hash); err != nil || o.User.ID != u.ID {
		t.Fatalf("after reopening: %+v %v", o.User, err)
	}
	if st, _ := s2.Stats(c); st.Users != 1 || st.Tokens != 1 || st.LastSeq != 2 {
		t.Fatalf("after reopening: %+v", st)
	}
}
