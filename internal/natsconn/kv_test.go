package natsconn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/forecastd/forecastd/internal/testserver/authtest"
)

// TestOpenKVUnansweredRequests: a JetStream API that never answers (as a
// cluster without a meta leader may not) costs one attempt per try, not
// the whole deadline; each failed attempt is heard, and the error at the
// end says the deadline passed.
func TestOpenKVUnansweredRequests(t *testing.T) {
	s := authtest.RunServer(t, &server.Options{Host: "127.0.0.1", Port: -1})
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	// A black hole where the JetStream API would be: requests get no
	// "no responders", and no answer.
	sub, err := nc.Subscribe("$JS.API.>", func(*nats.Msg) {})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var retries []error
	kv, _, err := openKV(ctx, js, jetstream.KeyValueConfig{Bucket: "b"}, 300*time.Millisecond, func(err error) { retries = append(retries, err) })
	if err == nil || kv != nil {
		t.Fatalf("opened %v against an API that never answers", kv)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want the deadline's", err)
	}
	// 2 s of 300 ms attempts and 200 ms pauses: about four.
	if len(retries) < 3 {
		t.Fatalf("%d failed attempts heard in 2 s of 300 ms attempts (%v): one request waited out the deadline", len(retries), retries)
	}
	for _, e := range retries {
		if !errors.Is(e, context.DeadlineExceeded) {
			t.Errorf("attempt failed with %v, want its own deadline", e)
		}
	}
}

// TestOpenKVRace: instances starting together all open the one bucket,
// whoever creates it.
func TestOpenKVRace(t *testing.T) {
	s := authtest.RunServer(t, &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir()})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n = 4
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		nc, err := nats.Connect(s.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			kv, st, err := OpenKV(ctx, js, jetstream.KeyValueConfig{Bucket: "shared", History: 1}, nil)
			if err == nil && st.Bucket() != "shared" {
				err = fmt.Errorf("status of bucket %q", st.Bucket())
			}
			if err == nil {
				_, err = kv.Put(ctx, "k", []byte{byte(i)})
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("instance %d: %v", i, err)
		}
	}
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	kv, err := js.KeyValue(ctx, "shared")
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Values() != 1 {
		t.Errorf("%d values in the bucket, want 1 (history 1, one key): not one bucket", st.Values())
	}
}
